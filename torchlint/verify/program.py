"""The user's program, for `--verify` findings whose slice cannot run on its own (it needs
the project's modules, a builtin the allow-list refuses, a value computed by code the
slicer does not follow, or a function's arguments that the program itself passes).

The file runs as its program, `python file.py` with no arguments, in the sandboxed worker
(`__name__ == "__main__"`, so its `if __name__ == "__main__":` block runs: that is where a
script's training loop calls the flagged function), from the read-only snapshot of the
project, with the flagged call instrumented as a slice's is. The file runs once for all its
findings that need it (batch_spec): each is judged where its own run would have stopped,
and the run stops when all are. A finding the program does not reach (it ends, fails or
runs out of time first) falls back to the rule's probe, which says why, without another
run. A notebook's program is its code cells up to the finding's.

Nothing here runs the code: it is planned in the parent and run only inside the sandbox
(SECURITY.md), which is the boundary, so no allow-list applies to the program."""

from __future__ import annotations

import ast
import copy
import os

from torchlint.diagnostics import Finding
from torchlint.verify.instrument import SliceRule
from torchlint.verify.project import ProjectTree, module_of
from torchlint.verify.safety import _SHAPE_FACTORIES, MAX_ELEMENTS, MAX_SEQUENCE, Unsafe, _shape_args, fold
from torchlint.verify.slicer import NotSelfContained, Slice, analysis, find_node, parent_map, statement_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_PROGRAM_BYTES = 1 << 20
# Findings one program run observes: their answers share one frame (_frames.MAX_FRAME).
MAX_MEMBERS = 32
_WRAPPERS = frozenset({"_tl_call", "_tl_at", "_tl_raised", "_tl_thunk", "_tl_ran", "_tl_mark"})
# The tensor factories whose literal sizes the pre-filter bounds, by their last name (a
# program calls them through any alias).
_FACTORIES = frozenset(name.rsplit(".", 1)[-1] for name in _SHAPE_FACTORIES)


def program_spec(finding: Finding, source: str, rule: SliceRule, project: ProjectTree,
                 notebook: bool) -> tuple[dict[str, Any], tuple[str, ...]]:
    """(the worker's `import` spec of kind "program", what of the user's code it runs as
    `file:line`); raises NotSelfContained with the reason it cannot."""
    if rule.construct:
        raise NotSelfContained("the rule observes a class, not a line of the program")
    if len(source.encode("utf-8", "surrogatepass")) > MAX_PROGRAM_BYTES:
        raise NotSelfContained("the program is too large to run here")
    where = _where(finding.path, project, notebook)
    info = analysis(source)
    try:
        literal_bounds(info.tree)
    except Unsafe as exc:
        raise NotSelfContained(f"not run: {exc}") from None
    # A copy of its own: the instrumentation edits the tree, and the analysis is shared.
    tree = ast.parse(source)
    node = _same_node(tree, find_node(info.positions, info.lines, finding.row, finding.col, finding.end_row,
                                      finding.end_col))
    parents = parent_map(tree)
    statement = statement_of(node, parents)
    modules = rule.instrument(Slice(tree, node, statement, parents))
    if not modules:
        raise NotSelfContained("the flagged code has no observable call")
    rel, path = where
    spec = {"kind": "program", "file": rel, "path": path, "variants": [ast.unparse(m) for m in modules],
            "stop": rule.stop, "grads": rule.grads, "tree": project.digest}
    ran = [f"{finding.path}:{n.lineno}" for n in _enclosing(statement, parents)] + [f"{finding.path}:{statement.lineno}"]
    return spec, tuple(dict.fromkeys(ran))[:16]


def batch_spec(members: list[tuple[Finding, SliceRule, dict[str, Any]]], source: str, file: str, path: list[str],
               tree: str) -> tuple[dict[str, Any], list[int]]:
    """One run of the program `source` for several of its findings (each with its rule's
    slice shape and facts, at its place in `source`): every member's flagged line
    instrumented in one copy of the program, its tags prefixed `m<i>:`, so the worker runs
    the file once and judges each member where its own run would have stopped. (the
    worker's spec, the indices of the members it holds: one whose instrumentation does not
    fit beside the others', or that needs two runs, is left out.)"""
    info = analysis(source)
    module = ast.parse(source)
    held: list[int] = []
    entries: list[dict[str, Any]] = []
    for i, (finding, rule, facts) in enumerate(members):
        if len(held) >= MAX_MEMBERS:
            break
        # Bounded: the file was size-checked and literal-bounded by program_spec.
        before = copy.deepcopy(module)
        try:
            node = _same_node(module, find_node(info.positions, info.lines, finding.row, finding.col, finding.end_row,
                                                finding.end_col))
            parents = parent_map(module)
            variants = rule.instrument(Slice(module, node, statement_of(node, parents), parents))
        except (NotSelfContained, ValueError, KeyError, AssertionError, StopIteration):
            variants = None
        if not variants or len(variants) != 1 or variants[0] is not module:
            module = before  # a rule that compares two runs has its own
            continue
        _prefix(module, f"m{i}")
        held.append(i)
        entries.append({"tag": f"m{i}", "code": finding.code, "facts": facts, "stop": rule.stop, "grads": rule.grads})
    spec = {"kind": "program", "file": file, "path": path, "source": ast.unparse(module), "tree": tree,
            "members": entries}
    return spec, held


def _prefix(module: ast.Module, prefix: str) -> None:
    """Prefix the tags that no member has claimed yet (the ones just added) with `prefix`."""
    for node in ast.walk(module):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _WRAPPERS \
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            node.args[0] = ast.Constant(" ".join(t if ":" in t else f"{prefix}:{t}" for t in node.args[0].value.split()))


def literal_bounds(tree: ast.Module) -> None:
    """The pre-filter's literal bounds, over the whole program (raises Unsafe): an obvious
    `9**9**9` or `torch.ones(3 * 10**9)` anywhere in the file keeps the program from
    starting, as it keeps a slice from starting; the sandbox bounds what no literal shows."""
    parents = parent_map(tree)
    for node in ast.walk(tree):
        if isinstance(node, (ast.BinOp, ast.UnaryOp)) and not isinstance(parents.get(id(node)),
                                                                          (ast.BinOp, ast.UnaryOp)):
            fold(node)
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
                for seq, count in ((node.left, node.right), (node.right, node.left)):
                    n = fold(count)
                    if isinstance(n, int) and isinstance(seq, (ast.List, ast.Tuple, ast.Constant)) \
                            and n > MAX_SEQUENCE:
                        raise Unsafe(f"repeats a literal sequence {n} times")
        elif isinstance(node, ast.Call) and (node.func.attr if isinstance(node.func, ast.Attribute) else
                                             getattr(node.func, "id", "")) in _FACTORIES:
            total = 1
            for dim in _shape_args(node):
                value = fold(dim)
                if isinstance(value, int) and not isinstance(value, bool):
                    total *= max(value, 0)
            if total > MAX_ELEMENTS:
                raise Unsafe(f"a call with a literal size of {total:.3g} elements (more than {MAX_ELEMENTS})")


def _where(path: str, project: ProjectTree, notebook: bool) -> tuple[str, list[str]]:
    """(the file's path in the snapshot, the sys.path entries its program gets)."""
    if notebook:
        rel = os.path.relpath(os.path.realpath(path), project.root)
        if rel.startswith(os.pardir + os.sep) or os.path.isabs(rel):
            raise NotSelfContained("the notebook is not inside the checked project")
        base = os.path.dirname(rel)
        return rel, list(dict.fromkeys([base, ""]))
    found = project.relative(path)
    if found is None:
        raise NotSelfContained("the file is not a Python module of the checked project")
    # Run as a script: its own directory first on sys.path, as `python file.py` has it,
    # then the package root, so both script-style and package imports resolve.
    _, path_entries = module_of(found, project.files)
    return found, list(dict.fromkeys([os.path.dirname(found), *path_entries]))


def _same_node(tree: ast.Module, node: ast.AST) -> ast.AST:
    """The node of `tree` at the position and of the type of `node` (from another parse)."""
    key = (type(node), getattr(node, "lineno", None), getattr(node, "col_offset", None),
           getattr(node, "end_lineno", None), getattr(node, "end_col_offset", None))
    for candidate in ast.walk(tree):
        if (type(candidate), getattr(candidate, "lineno", None), getattr(candidate, "col_offset", None),
                getattr(candidate, "end_lineno", None), getattr(candidate, "end_col_offset", None)) == key:
            return candidate
    raise NotSelfContained("the flagged code is no longer at the reported location")


def _enclosing(node: ast.AST, parents: dict[int, ast.AST]) -> list[ast.stmt]:
    """The functions and classes around the flagged statement, outermost first."""
    out: list[ast.stmt] = []
    while id(node) in parents:
        node = parents[id(node)]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.append(node)
    return out[::-1]
