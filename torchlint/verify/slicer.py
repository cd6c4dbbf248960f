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
from typing import Any, Callable, Iterable, Optional, cast

from torchlint.source import split_lines
from torchlint.verify.safety import ALLOWED_BUILTINS, Unsafe, Validator, check_shape, iter_with_depth

MAX_SOURCE_BYTES = 2_000_000
_BLOCKS = ("body", "orelse", "finalbody")
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


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


# -- names -----------------------------------------------------------------------
def _header_nodes(stmt: ast.stmt) -> list[ast.AST]:
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


def _is_compound(stmt: ast.stmt) -> bool:
    return not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and any(
        isinstance(getattr(stmt, f, None), list) and getattr(stmt, f) and isinstance(getattr(stmt, f)[0], ast.stmt)
        for f in _BLOCKS) or isinstance(stmt, ast.Try)


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
            is_scope = isinstance(node, (*_SCOPES, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp))
            for child in ast.iter_child_nodes(node):
                stack.append((child, nested or is_scope))
    return bound, read - (inner - bound)


def _root_name(node: ast.AST) -> Optional[str]:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call, ast.Starred)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _mutated(stmt: ast.stmt) -> set[str]:
    """Names whose object a statement may change in place: `x.add_(1)`, `opt.step()`,
    `x[0] = 1`, `m.w = ...`, `del x[0]`."""
    out: set[str] = set()
    if isinstance(stmt, ast.Expr):
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call):
                if isinstance(node.func, ast.Attribute):
                    name = _root_name(node.func.value)
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
                name = _root_name(node)
                if name:
                    out.add(name)
    return out


# -- the slice -------------------------------------------------------------------------
class _Units:
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
            if _is_compound(stmt):
                children: list[ast.stmt] = []
                for f in _BLOCKS:
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
            found = self._names[id(stmt)] = names_of(_header_nodes(stmt)) if _is_compound(stmt) else names_of([stmt])
        return found

    def mutated(self, stmt: ast.stmt) -> set[str]:
        found = self._mutated.get(id(stmt))
        if found is None:
            found = self._mutated[id(stmt)] = _mutated(stmt)
        return found


def _select(units: _Units, seeds: list[ast.stmt], needed: set[str],
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


def _prune(block: list[ast.stmt], kept: set[int]) -> list[ast.stmt]:
    """The kept statements of a block. Compound statements are copied (shallowly) with
    pruned blocks, so the cached tree of the file is never changed; an emptied block gets
    a `pass`. Recursion follows statement nesting, which `parse` bounded."""
    return [_pruned(s, kept) for s in block if id(s) in kept]


def _pruned(stmt: ast.stmt, kept: set[int]) -> ast.stmt:
    if not _is_compound(stmt):
        return stmt
    clone = copy.copy(stmt)
    for f in _BLOCKS:
        block = getattr(stmt, f, None)
        if block:
            new = _prune(block, kept)
            setattr(clone, f, new or ([ast.Pass()] if f in ("body", "finalbody") else []))
    for f in ("handlers", "cases"):  # except clauses, match cases: each has a body
        parts = getattr(stmt, f, None)
        if parts:
            setattr(clone, f, [_with_body(part, _prune(part.body, kept) or [ast.Pass()]) for part in parts])
    return clone


def _with_body(node: ast.AST, body: list[ast.stmt]) -> ast.AST:
    clone = copy.copy(node)
    clone.body = body  # type: ignore[attr-defined]
    return clone


class _FileAnalysis:
    """One parse of a file's current text, shared (read-only) by all its findings."""

    def __init__(self, text: str) -> None:
        self.tree = parse(text)
        self.lines = split_lines(text)
        self.parents = parent_map(self.tree)
        self.positions = position_index(self.tree)
        self._units: dict[tuple[int, tuple[int, ...]], _Units] = {}

    def units(self, key: ast.AST, body: list[ast.stmt]) -> _Units:
        # Keyed by the statements too: the module is seen with and without a function
        # (the call-site search leaves the callee out), and each view is its own order.
        cache_key = (id(key), tuple(map(id, body)))
        found = self._units.get(cache_key)
        if found is None:
            found = self._units[cache_key] = _Units(body)
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
    scopes = [a for a in _ancestors(stmt, parents) if isinstance(a, _SCOPES)]
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
        kept, needed, bound = _select(units, seed_stmts, needed)
        params = _parameters(function)
        unknown = sorted((needed - bound) & set(params))
        bindings: list[ast.stmt] = []
        call_site: Optional[ast.stmt] = None
        caller: Optional[ast.FunctionDef] = None
        if unknown:
            # Arguments come from the first call of the function in module-level code or
            # in a module-level function without parameters (`main()`).
            caller, call_site, bindings = _bind_arguments(info, function, params, unknown)
            bound |= set(unknown)
        inner = _inline_returns(_prune(function.body, kept))
        # The arguments are read where the call is: `model = model` needs the caller's model.
        needed = (needed - bound) | names_of(bindings)[1]
        if caller is not None:
            caller_units = info.units(caller, caller.body)
            ckept, needed, cbound = _select(caller_units, [], needed, upto=caller_units.index[id(call_site)])
            inner = _inline_returns(_prune(caller.body, ckept)) + bindings + inner
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
            mkept, needed, mbound = _select(module_units, [], needed)
        else:
            # What runs at module level before the call (inside `if __name__ == ...` too).
            module_units = info.units(tree, module_body)
            upto = module_units.index[id(call_site)]
            candidates = module_body
            mkept, needed, mbound = _select(module_units, [], needed, upto=upto)
        outer = _prune(candidates, mkept)
        body = outer + bindings + inner
        bound |= mbound
    else:
        units = info.units(tree, module_body)
        kept, needed, bound = _select(units, seed_stmts, needed)
        body = _prune(module_body, kept)
    missing = sorted(needed - bound - ALLOWED_BUILTINS - {"__name__"})
    if missing:
        raise NotSelfContained(f"`{missing[0]}` has no value in the file")
    return _finish(body, node)


def _parameters(function: ast.FunctionDef) -> list[str]:
    args = function.args
    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    return names + [a.arg for a in (args.vararg, args.kwarg) if a is not None]


def _bind_arguments(info: "_FileAnalysis", function: ast.FunctionDef, params: list[str],
                    unknown: list[str]) -> tuple[Optional[ast.FunctionDef], ast.stmt, list[ast.stmt]]:
    """(caller, call statement, `param = argument` for each parameter) from the first call
    `function(...)` in module-level code, or else in a module-level function that takes no
    arguments; defaults fill the rest. caller is None for a module-level call."""
    scopes: list[tuple[Optional[ast.FunctionDef], _Units]] = [
        (None, info.units(info.tree, [s for s in info.tree.body if s is not function]))]
    scopes += [(s, info.units(s, s.body)) for s in info.tree.body if isinstance(s, ast.FunctionDef)
               and s is not function and not _parameters(s)]
    for caller, units in scopes:
        for stmt in units.order:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            parts = _header_nodes(stmt) if _is_compound(stmt) else [stmt]
            for node in (n for part in parts for n in ast.walk(part)):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == function.name:
                    values = _argument_values(function, node)
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


def _argument_values(function: ast.FunctionDef, call: ast.Call) -> Optional[dict[str, ast.expr]]:
    args = function.args
    if args.vararg or args.kwarg or any(isinstance(a, ast.Starred) for a in call.args) or any(
            k.arg is None for k in call.keywords):
        return None  # *args / **kwargs: not worth guessing
    positional = [*args.posonlyargs, *args.args]
    if len(call.args) > len(positional):
        return None
    values: dict[str, ast.expr] = {p.arg: v for p, v in zip(positional, call.args)}
    for k in call.keywords:
        values[k.arg] = k.value  # type: ignore[index]
    for p, default in zip(positional[len(positional) - len(args.defaults):], args.defaults):
        values.setdefault(p.arg, default)
    for p, kw_default in zip(args.kwonlyargs, args.kw_defaults):
        if kw_default is not None:
            values.setdefault(p.arg, kw_default)
    return values


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
    kept, needed, bound = _select(units, [cls], set())
    missing = sorted(needed - bound - ALLOWED_BUILTINS - {"__name__"})
    if missing:
        raise NotSelfContained(f"`{missing[0]}` has no value in the file")
    sl = _finish(_prune(tree.body, kept), node)
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
                for f in _BLOCKS:
                    if isinstance(getattr(stmt, f, None), list):
                        stack.append(getattr(stmt, f))
                for handler in getattr(stmt, "handlers", None) or []:
                    stack.append(handler.body)
    return body


def statement_scope(stmt: ast.AST, parents: dict[int, ast.AST]) -> Optional[ast.AST]:
    for a in _ancestors(stmt, parents):
        if isinstance(a, _SCOPES):
            return a
    return None
