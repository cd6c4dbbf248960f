"""Program slices of the user's own code: the flagged statement plus the statements it
depends on, back to literals, torch/numpy/math/random calls and local definitions.

The parent re-reads and re-parses the file (nothing comes from the lint cache), finds the
flagged node by its exact location, and builds a pruned module:

- the enclosing scope is the module, or a module-level function whose parameters the
  slice does not need (a parameter has no value in the file: the slice is then not
  self-contained and the rule's fact probe runs instead);
- a statement is kept when it binds or mutates a name a kept statement reads; compound
  statements around kept ones keep their headers; names a function reads from the module
  are resolved against module-level statements;
- anything unresolved at the end (a name with no value in the file) makes the slice not
  self-contained.

All walks are iterative; `safety.check_shape` bounds depth before any recursive tool runs."""

from __future__ import annotations

import ast
import copy
import hashlib
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, cast

from torchlint.source import split_lines
from torchlint.verify.callsites import argument_values, parameters
from torchlint.verify.dataflow import (BLOCKS, SCOPES, Units, header_nodes, is_compound, names_of, prune,
                                       select)
from torchlint.verify.safety import ALLOWED_BUILTINS, Unsafe, Validator, check_shape, iter_with_depth

MAX_SOURCE_BYTES = 2_000_000


class NotSelfContained(Exception):
    """The flagged code cannot run in isolation; the message says why."""


@dataclass
class Slice:
    module: ast.Module
    flagged: ast.AST  # the reported node, inside `module`
    statement: ast.stmt  # the statement holding it
    parents: dict[int, ast.AST] = field(default_factory=dict)

    def parent_of(self, node: ast.AST) -> Optional[ast.AST]:
        return self.parents.get(id(node))


def parse(text: str) -> ast.Module:
    if len(text.encode("utf-8", "surrogatepass")) > MAX_SOURCE_BYTES:
        raise NotSelfContained("the file is too large to slice")
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise NotSelfContained(f"the file does not parse now ({type(exc).__name__})") from None
    try:
        check_shape_loose(tree)
    except Unsafe as exc:
        raise NotSelfContained(str(exc)) from None
    return tree


def check_shape_loose(tree: ast.AST) -> None:
    for _, depth in iter_with_depth(tree):
        if depth > 200:
            raise Unsafe("the code nests too deeply to slice")


def parent_map(tree: ast.AST) -> dict[int, ast.AST]:
    parents: dict[int, ast.AST] = {}
    stack = [tree]
    while stack:
        node = stack.pop()
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
            stack.append(child)
    return parents


def position_index(tree: ast.Module) -> dict[tuple[int, int], list[ast.AST]]:
    """Nodes by (line, byte column) of their start, outer nodes first."""
    index: dict[tuple[int, int], list[ast.AST]] = {}
    for node in ast.walk(tree):  # breadth first: outer nodes come first
        start = (getattr(node, "lineno", None), getattr(node, "col_offset", None))
        if start[0] is not None:
            index.setdefault(start, []).append(node)  # type: ignore[arg-type]
    return index


def find_node(index: dict[tuple[int, int], list[ast.AST]], lines: list[str], row: int, col: int, end_row: int,
              end_col: int) -> ast.AST:
    """The outermost node spanning exactly the finding's range (columns are 1-based code
    points in findings, UTF-8 byte offsets in the AST)."""
    def offset(r: int, c: int) -> int:
        line = lines[r - 1] if 0 < r <= len(lines) else ""
        return len(line[:max(c - 1, 0)].encode("utf-8", "surrogatepass"))

    start, end = offset(row, col), offset(end_row, end_col)
    starts_here = index.get((row, start), [])
    exact = [n for n in starts_here if getattr(n, "end_lineno", None) == end_row
             and getattr(n, "end_col_offset", None) == end]
    # An expression statement spans exactly its expression: rules report the expression.
    for candidates in (exact, starts_here):
        chosen = next((n for n in candidates if not isinstance(n, ast.Expr)), None) or (
            candidates[0] if candidates else None)
        if chosen is not None:
            return chosen
    raise NotSelfContained("the flagged code is no longer at the reported location")


def statement_of(node: ast.AST, parents: dict[int, ast.AST]) -> ast.stmt:
    while not isinstance(node, ast.stmt):
        node = parents[id(node)]
    return node


def _ancestors(node: ast.AST, parents: dict[int, ast.AST]) -> list[ast.AST]:
    out = []
    while id(node) in parents:
        node = parents[id(node)]
        out.append(node)
    return out


class _FileAnalysis:
    """One parse of a file's current text, shared (read-only) by all its findings."""

    def __init__(self, text: str) -> None:
        self.tree = parse(text)
        self.lines = split_lines(text)
        self.parents = parent_map(self.tree)
        self.positions = position_index(self.tree)
        self._units: dict[tuple[int, tuple[int, ...]], Units] = {}

    def units(self, key: ast.AST, body: list[ast.stmt]) -> Units:
        # Keyed by the statements too: the module is seen with and without a function
        # (the call-site search leaves the callee out), and each view is its own order.
        cache_key = (id(key), tuple(map(id, body)))
        found = self._units.get(cache_key)
        if found is None:
            found = self._units[cache_key] = Units(body)
        return found


_ANALYSES: "OrderedDict[bytes, _FileAnalysis]" = OrderedDict()


def analysis(text: str) -> _FileAnalysis:
    key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
    found = _ANALYSES.get(key)
    if found is None:
        found = _FileAnalysis(text)
        _ANALYSES[key] = found
        while len(_ANALYSES) > 8:
            _ANALYSES.popitem(last=False)
    _ANALYSES.move_to_end(key)
    return found


def _finish(body: list[ast.stmt], node: ast.AST) -> Slice:
    """Check the pruned module, then give the slice its own copy (instrumentation edits it)."""
    module = ast.Module(body=body, type_ignores=[])
    try:
        check_shape(module)
        Validator().check(module)
    except Unsafe as exc:
        raise NotSelfContained(f"the slice is not allowed to run: {exc}") from None
    memo: dict[int, Any] = {}
    own = copy.deepcopy(module, memo)  # bounded: check_shape passed
    flagged = memo.get(id(node))
    if flagged is None:
        raise NotSelfContained("the flagged code is not part of its slice")
    parents = parent_map(own)
    return Slice(own, flagged, statement_of(flagged, parents), parents)


def build(text: str, row: int, col: int, end_row: int, end_col: int,
          related: Optional[Callable[[ast.Module, ast.AST, dict[int, ast.AST]], list[ast.AST]]] = None,
          extra_seed: Optional[Callable[[list[ast.stmt]], list[ast.stmt]]] = None, construct: bool = False) -> Slice:
    """Slice `text` at the finding's range. `related(tree, node, parents)` may name more
    nodes whose statements must be in the slice (the loss call a flagged cast feeds).
    `construct`: the finding is inside a module-level class; the slice defines the class
    (and what it needs) so that it can be instantiated without arguments."""
    info = analysis(text)
    tree, parents = info.tree, info.parents
    node = find_node(info.positions, info.lines, row, col, end_row, end_col)
    stmt = statement_of(node, parents)
    if construct:
        return _class_slice(info, node)
    seeds_nodes = [node, *(related(tree, node, parents) if related else [])]
    seed_stmts = [statement_of(n, parents) for n in seeds_nodes]

    # The scope: the module, or one module-level function.
    scopes = [a for a in _ancestors(stmt, parents) if isinstance(a, SCOPES)]
    if any(isinstance(a, (ast.ClassDef, ast.Lambda)) for a in scopes) or len(scopes) > 1:
        raise NotSelfContained("the flagged code is inside a method or nested function; its inputs "
                               "(`self`, arguments) have no value in the file")
    # Neither a class nor a lambda (refused above): a function, or None at module level.
    function = cast(Optional[ast.FunctionDef], scopes[0] if scopes else None)
    if function is not None and parents.get(id(function)) is not tree:
        raise NotSelfContained("the flagged code is inside a function that is not defined at module level")
    for s in seed_stmts:
        if statement_scope(s, parents) is not function:
            raise NotSelfContained("the code the finding depends on lies in another function")
    if extra_seed is not None:  # only statements of this scope (not those of functions in it)
        seed_stmts.extend(s for s in extra_seed(function.body if function else tree.body)
                          if statement_scope(s, parents) is function)

    module_body = [s for s in tree.body if s is not function]
    needed: set[str] = set()
    if function is not None:
        units = info.units(function, function.body)
        kept, needed, bound = select(units, seed_stmts, needed)
        params = parameters(function)
        unknown = sorted((needed - bound) & set(params))
        bindings: list[ast.stmt] = []
        call_site: Optional[ast.stmt] = None
        caller: Optional[ast.FunctionDef] = None
        if unknown:
            # Arguments come from the first call of the function in module-level code or
            # in a module-level function without parameters (`main()`).
            caller, call_site, bindings = _bind_arguments(info, function, params, unknown)
            bound |= set(unknown)
        inner = _inline_returns(prune(function.body, kept))
        # The arguments are read where the call is: `model = model` needs the caller's model.
        needed = (needed - bound) | names_of(bindings)[1]
        if caller is not None:
            caller_units = info.units(caller, caller.body)
            ckept, needed, cbound = select(caller_units, [], needed, upto=caller_units.index[id(call_site)])
            inner = _inline_returns(prune(caller.body, ckept)) + bindings + inner
            bindings = []
            needed -= cbound
            bound |= cbound
            call_site = None
            function = caller  # module-level names are resolved around the caller
        if call_site is None:
            # Module-level names the function reads: definitions before it, and imports,
            # functions and classes anywhere (they only bind names).
            at = tree.body.index(function)
            candidates = [s for i, s in enumerate(tree.body) if s is not function and (
                i < at or isinstance(s, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)))]
            module_units = info.units(function.args, candidates)
            mkept, needed, mbound = select(module_units, [], needed)
        else:
            # What runs at module level before the call (inside `if __name__ == ...` too).
            module_units = info.units(tree, module_body)
            upto = module_units.index[id(call_site)]
            candidates = module_body
            mkept, needed, mbound = select(module_units, [], needed, upto=upto)
        outer = prune(candidates, mkept)
        body = outer + bindings + inner
        bound |= mbound
    else:
        units = info.units(tree, module_body)
        kept, needed, bound = select(units, seed_stmts, needed)
        body = prune(module_body, kept)
    missing = sorted(needed - bound - ALLOWED_BUILTINS - {"__name__"})
    if missing:
        raise NotSelfContained(f"`{missing[0]}` has no value in the file")
    return _finish(body, node)


def _bind_arguments(info: "_FileAnalysis", function: ast.FunctionDef, params: list[str],
                    unknown: list[str]) -> tuple[Optional[ast.FunctionDef], ast.stmt, list[ast.stmt]]:
    """(caller, call statement, `param = argument` for each parameter) from the first call
    `function(...)` in module-level code, or else in a module-level function that takes no
    arguments; defaults fill the rest. caller is None for a module-level call."""
    scopes: list[tuple[Optional[ast.FunctionDef], Units]] = [
        (None, info.units(info.tree, [s for s in info.tree.body if s is not function]))]
    scopes += [(s, info.units(s, s.body)) for s in info.tree.body if isinstance(s, ast.FunctionDef)
               and s is not function and not parameters(s)]
    for caller, units in scopes:
        for stmt in units.order:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            parts = header_nodes(stmt) if is_compound(stmt) else [stmt]
            for node in (n for part in parts for n in ast.walk(part)):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == function.name:
                    values = argument_values(function, node)
                    if values is None:
                        break
                    missing = [p for p in unknown if p not in values]
                    if missing:
                        raise NotSelfContained(f"the call of `{function.name}()` gives no value for `{missing[0]}`")
                    bindings: list[ast.stmt] = [
                        ast.Assign(targets=[ast.Name(p, ast.Store())], value=copy.deepcopy(values[p]))
                        for p in params if p in values]
                    return caller, stmt, bindings
    raise NotSelfContained(f"it needs `{unknown[0]}`, a parameter of `{function.name}()`, and no module-level "
                           f"call of `{function.name}()` gives it a value")


def _class_slice(info: _FileAnalysis, node: ast.AST) -> Slice:
    tree, parents = info.tree, info.parents
    cls = next((a for a in [node, *_ancestors(node, parents)] if isinstance(a, ast.ClassDef)), None)
    if cls is None or parents.get(id(cls)) is not tree:
        raise NotSelfContained("the flagged code is not inside a class defined at module level")
    init = next((s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)
    if init is not None:
        args = init.args
        required = len(args.posonlyargs) + len(args.args) - len(args.defaults) - 1
        if required > 0 or any(d is None for d in args.kw_defaults):
            raise NotSelfContained(f"`{cls.name}()` needs constructor arguments that have no value in the file")
    units = info.units(tree, tree.body)
    kept, needed, bound = select(units, [cls], set())
    missing = sorted(needed - bound - ALLOWED_BUILTINS - {"__name__"})
    if missing:
        raise NotSelfContained(f"`{missing[0]}` has no value in the file")
    sl = _finish(prune(tree.body, kept), node)
    own_cls = next(a for a in [sl.flagged, *_ancestors(sl.flagged, sl.parents)] if isinstance(a, ast.ClassDef))
    return Slice(sl.module, sl.flagged, own_cls, sl.parents)


def _inline_returns(body: list[ast.stmt]) -> list[ast.stmt]:
    """The function body runs at module level: `return x` becomes the expression `x`."""
    stack = [body]
    while stack:
        block = stack.pop()
        for i, stmt in enumerate(block):
            if isinstance(stmt, ast.Return):
                block[i] = ast.copy_location(ast.Expr(stmt.value), stmt) if stmt.value is not None else \
                    ast.copy_location(ast.Pass(), stmt)
            elif not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                for f in BLOCKS:
                    if isinstance(getattr(stmt, f, None), list):
                        stack.append(getattr(stmt, f))
                for handler in getattr(stmt, "handlers", None) or []:
                    stack.append(handler.body)
    return body


def statement_scope(stmt: ast.AST, parents: dict[int, ast.AST]) -> Optional[ast.AST]:
    for a in _ancestors(stmt, parents):
        if isinstance(a, SCOPES):
            return a
    return None
