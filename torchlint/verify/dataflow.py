"""Data flow over one scope's statements, for the slicer: the names a statement binds and
reads, the names whose objects it may change in place, the scope's statements in execution
order, and the backward pass that keeps what the seeds depend on. All walks are iterative."""

from __future__ import annotations

import ast
import copy

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterable, Optional

BLOCKS = ("body", "orelse", "finalbody")
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


# -- names -----------------------------------------------------------------------
def header_nodes(stmt: ast.stmt) -> list[ast.AST]:
    """The parts of a statement that run when it is entered (not its nested blocks)."""
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return [stmt.target, stmt.iter]
    if isinstance(stmt, (ast.If, ast.While)):
        return [stmt.test]
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return list(stmt.items)
    if isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
        return []
    if isinstance(stmt, ast.Match):
        return [stmt.subject]
    return [stmt]


def is_compound(stmt: ast.stmt) -> bool:
    return not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and any(
        isinstance(getattr(stmt, f, None), list) and getattr(stmt, f) and isinstance(getattr(stmt, f)[0], ast.stmt)
        for f in BLOCKS) or isinstance(stmt, ast.Try)


def names_of(parts: Iterable[ast.AST]) -> tuple[set[str], set[str]]:
    """(bound, read) names of these nodes; names bound inside a nested scope, comprehension
    or lambda are not free reads."""
    bound: set[str] = set()
    read: set[str] = set()
    inner: set[str] = set()
    for part in parts:
        stack: list[tuple[ast.AST, bool]] = [(part, False)]
        while stack:
            node, nested = stack.pop()
            if isinstance(node, ast.Name):
                if isinstance(node.ctx, ast.Load):
                    read.add(node.id)
                else:
                    (inner if nested else bound).add(node.id)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    (inner if nested else bound).add((alias.asname or alias.name).split(".")[0])
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                read.add(node.target.id)  # `x += 1` reads x first
            elif isinstance(node, ast.arg):
                inner.add(node.arg)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                (inner if nested else bound).add(node.name)
            elif isinstance(node, (ast.ExceptHandler,)) and node.name:
                (inner if nested else bound).add(node.name)
            is_scope = isinstance(node, (*SCOPES, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp))
            for child in ast.iter_child_nodes(node):
                stack.append((child, nested or is_scope))
    return bound, read - (inner - bound)


def root_name(node: ast.AST) -> Optional[str]:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call, ast.Starred)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def mutated_names(stmt: ast.stmt) -> set[str]:
    """Names whose object a statement may change in place: `x.add_(1)`, `opt.step()`,
    `x[0] = 1`, `m.w = ...`, `del x[0]`."""
    out: set[str] = set()
    if isinstance(stmt, ast.Expr):
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call):
                if isinstance(node.func, ast.Attribute):
                    name = root_name(node.func.value)
                    if name:
                        out.add(name)
                # A function may change the objects it is given: `set_train(model)`.
                out.update(a.id for a in [*node.args, *(k.value for k in node.keywords)] if isinstance(a, ast.Name))
    targets: list[ast.AST] = []
    if isinstance(stmt, ast.Assign):
        targets = list(stmt.targets)
    elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
        targets = [stmt.target]
    elif isinstance(stmt, ast.Delete):
        targets = list(stmt.targets)
    for target in targets:
        for node in ast.walk(target):
            if isinstance(node, (ast.Attribute, ast.Subscript)):
                name = root_name(node)
                if name:
                    out.add(name)
    return out


# -- the slice -------------------------------------------------------------------------
class Units:
    """The statements of one scope in execution (pre)order, with their enclosing compound
    statements; nested functions and classes are single units."""

    def __init__(self, body: list[ast.stmt]) -> None:
        self.order: list[ast.stmt] = []
        self.enclosing: dict[int, list[ast.stmt]] = {}
        stack: list[tuple[ast.stmt, list[ast.stmt]]] = [(s, []) for s in reversed(body)]
        while stack:
            stmt, outer = stack.pop()
            self.order.append(stmt)
            self.enclosing[id(stmt)] = outer
            if is_compound(stmt):
                children: list[ast.stmt] = []
                for f in BLOCKS:
                    children.extend(getattr(stmt, f, None) or [])
                for handler in getattr(stmt, "handlers", None) or []:
                    children.extend(handler.body)
                for case in getattr(stmt, "cases", None) or []:
                    children.extend(case.body)
                stack.extend((c, outer + [stmt]) for c in reversed(children))
        self.index = {id(s): i for i, s in enumerate(self.order)}
        self._names: dict[int, tuple[set[str], set[str]]] = {}
        self._mutated: dict[int, set[str]] = {}

    def header_names(self, stmt: ast.stmt) -> tuple[set[str], set[str]]:
        found = self._names.get(id(stmt))
        if found is None:
            found = self._names[id(stmt)] = names_of(header_nodes(stmt)) if is_compound(stmt) else names_of([stmt])
        return found

    def mutated(self, stmt: ast.stmt) -> set[str]:
        found = self._mutated.get(id(stmt))
        if found is None:
            found = self._mutated[id(stmt)] = mutated_names(stmt)
        return found


def select(units: Units, seeds: list[ast.stmt], needed: set[str],
            upto: Optional[int] = None) -> tuple[set[int], set[str], set[str]]:
    """Backward dependency pass over the statements before index `upto` (default: up to
    the last seed, or all). Returns (kept statement ids, names still needed, names bound)."""
    kept: set[int] = set()
    bound: set[str] = set()

    def keep(stmt: ast.stmt) -> None:
        for s in [*units.enclosing[id(stmt)], stmt]:
            if id(s) not in kept:
                kept.add(id(s))
                b, r = units.header_names(s)
                bound.update(b)
                needed.update(r)

    last = max((units.index[id(s)] for s in seeds), default=len(units.order) - 1 if upto is None else upto - 1)
    for s in seeds:
        keep(s)
    changed = True
    while changed:  # until no statement before the seeds binds or mutates a needed name
        changed = False
        for i in range(last, -1, -1):
            stmt = units.order[i]
            if id(stmt) in kept:
                continue
            b, _ = units.header_names(stmt)
            if b & needed or units.mutated(stmt) & needed:
                keep(stmt)
                changed = True
    return kept, needed, bound


def prune(block: list[ast.stmt], kept: set[int]) -> list[ast.stmt]:
    """The kept statements of a block. Compound statements are copied (shallowly) with
    pruned blocks, so the cached tree of the file is never changed; an emptied block gets
    a `pass`. Recursion follows statement nesting, which `parse` bounded."""
    return [pruned(s, kept) for s in block if id(s) in kept]


def pruned(stmt: ast.stmt, kept: set[int]) -> ast.stmt:
    if not is_compound(stmt):
        return stmt
    clone = copy.copy(stmt)
    for f in BLOCKS:
        block = getattr(stmt, f, None)
        if block:
            new = prune(block, kept)
            setattr(clone, f, new or ([ast.Pass()] if f in ("body", "finalbody") else []))
    for f in ("handlers", "cases"):  # except clauses, match cases: each has a body
        parts = getattr(stmt, f, None)
        if parts:
            setattr(clone, f, [with_body(part, prune(part.body, kept) or [ast.Pass()]) for part in parts])
    return clone


def with_body(node: ast.AST, body: list[ast.stmt]) -> ast.AST:
    clone = copy.copy(node)
    clone.body = body  # type: ignore[attr-defined]
    return clone
