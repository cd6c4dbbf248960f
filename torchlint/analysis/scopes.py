"""Grad-mode regions and per-scope assignment tracking."""

from __future__ import annotations

import ast
from bisect import bisect_right

from torchlint.analysis.nodes import STATEMENT_FIELDS, child_list, statement_fields
from torchlint.fast_dataclass import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Iterator, Optional, Sequence, Union
    from torchlint.analysis.imports import QualnameResolver
    Scope = Union[ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda]

FUNCTION_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)

_DISABLING = {"torch.no_grad", "torch.inference_mode"}
_ENABLING = {"torch.enable_grad"}


@dataclass
class GradRegion:
    node: ast.AST  # the With statement or the decorated function
    disabled: bool
    kind: str  # e.g. "torch.no_grad"

    @property
    def body(self) -> list[ast.stmt]:
        return self.node.body  # type: ignore[attr-defined,no-any-return]


def _literal_bool(node: Optional[ast.AST]) -> Optional[bool]:
    if isinstance(node, ast.Constant) and isinstance(node.value, bool):
        return node.value
    return None


def grad_mode_of(expr: ast.AST, imports: QualnameResolver) -> Optional[tuple[bool, str]]:
    """(disabled?, name) when `expr` is a grad-mode context manager or decorator:
    `torch.no_grad()`, `torch.inference_mode()`, `torch.set_grad_enabled(False)`,
    `torch.enable_grad()`; None when it is something else or not statically known."""
    target = expr.func if isinstance(expr, ast.Call) else expr
    name = imports.qualname(target)
    if name is None:
        return None
    call = expr if isinstance(expr, ast.Call) else None
    if name in _DISABLING:
        if name == "torch.inference_mode" and call is not None:
            mode = call.args[0] if call.args else next(
                (k.value for k in call.keywords if k.arg == "mode"), None)
            if mode is not None and _literal_bool(mode) is not True:
                return None if _literal_bool(mode) is None else (False, name)
        return True, name
    if name in _ENABLING:
        return False, name
    if name == "torch.set_grad_enabled" and call is not None and call.args:
        value = _literal_bool(call.args[0])
        if value is None:
            return None
        return (not value), name
    return None


_NESTED_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def iter_scope(nodes: list[ast.stmt]) -> Iterator[ast.AST]:
    """Every node under `nodes` in pre-order (iter_children's order), not descending into
    nested functions, lambdas or classes. Children come as lists (`child_list`): a generator
    per node made this a tenth of a lint (several analyses walk each function's scope)."""
    stack: list[ast.AST] = list(reversed(nodes))
    pop, extend = stack.pop, stack.extend
    while stack:
        node = pop()
        yield node
        if not isinstance(node, _NESTED_SCOPES):
            children = child_list(node)
            if children:
                children.reverse()
                extend(children)


def assigned_names(target: ast.AST) -> Iterator[tuple[str, Optional[int]]]:
    """Names bound by an assignment target, with their index when unpacked from a tuple."""
    if isinstance(target, ast.Name):
        yield target.id, None
    elif isinstance(target, (ast.Tuple, ast.List)):
        for i, elt in enumerate(target.elts):
            if isinstance(elt, ast.Name):
                yield elt.id, i
            elif isinstance(elt, ast.Starred) and isinstance(elt.value, ast.Name):
                yield elt.value.id, None


def local_names(scope: Scope) -> frozenset[str]:
    """The names a function binds (parameters, assignment and loop targets, imports, defs,
    `with ... as`, `except ... as`), minus `global`/`nonlocal` ones. Statements only: much
    cheaper than `Assignments` (a walrus deep in an expression is not seen)."""
    names: set[str] = set()
    outside: set[str] = set()
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        args = scope.args
        names.update(a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs))
        names.update(a.arg for a in (args.vararg, args.kwarg) if a is not None)
    if not isinstance(scope.body, list):
        return frozenset(names)
    stack: list[ast.AST] = list(scope.body)
    while stack:
        node = stack.pop()
        targets: Sequence[ast.AST] = ()
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)):
            targets = [node.target]
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            targets = [i.optional_vars for i in node.items if i.optional_vars is not None]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            continue  # its body is another scope
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name.split(".", 1)[0]) for a in node.names if a.name != "*")
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            outside.update(node.names)
        for target in targets:
            if isinstance(target, ast.Name):
                names.add(target.id)
            elif not isinstance(target, (ast.Attribute, ast.Subscript)):
                names.update(sub.id for sub in ast.walk(target) if isinstance(sub, ast.Name))
        for field in STATEMENT_FIELDS:
            stack.extend(getattr(node, field, ()))
    return frozenset(names - outside)


@dataclass
class Binding:
    """`name` was bound at `node` to `value` (None for a loop target, import, ...)."""

    name: str
    node: ast.AST  # the binding statement (Assign, AnnAssign, For, arg, ...)
    value: Optional[ast.AST]
    index: Optional[int] = None  # position when unpacked from a tuple
    annotation: Optional[ast.AST] = None

    @property
    def lineno(self) -> int:
        return getattr(self.node, "lineno", 0)


def _parameters(args: ast.arguments) -> Iterator[Binding]:
    for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
        yield Binding(a.arg, a, None, annotation=a.annotation)
    for extra in (args.vararg, args.kwarg):
        if extra is not None:
            yield Binding(extra.arg, extra, None)


# What each kind of node binds in its scope (a nested def or class binds its own name only).
def _assign(node: ast.Assign) -> Iterator[Binding]:
    for target in node.targets:
        for name, idx in assigned_names(target):
            yield Binding(name, node, node.value, idx)


def _ann_assign(node: ast.AnnAssign) -> Iterator[Binding]:
    if isinstance(node.target, ast.Name):
        yield Binding(node.target.id, node, node.value, annotation=node.annotation)


def _aug_assign(node: ast.AugAssign) -> Iterator[Binding]:
    if isinstance(node.target, ast.Name):
        yield Binding(node.target.id, node, node)


def _loop(node: Union[ast.For, ast.AsyncFor]) -> Iterator[Binding]:
    for name, idx in assigned_names(node.target):
        yield Binding(name, node, None, idx)


def _with_item(node: ast.withitem) -> Iterator[Binding]:
    if node.optional_vars is not None:
        for name, idx in assigned_names(node.optional_vars):
            yield Binding(name, node, node.context_expr, idx)


def _walrus(node: ast.NamedExpr) -> Iterator[Binding]:
    if isinstance(node.target, ast.Name):
        yield Binding(node.target.id, node, node.value)


def _definition(node: Union[ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef]) -> Iterator[Binding]:
    yield Binding(node.name, node, None)


def _import(node: Union[ast.Import, ast.ImportFrom]) -> Iterator[Binding]:
    for alias in node.names:
        if alias.name != "*":
            yield Binding(alias.asname or alias.name.split(".", 1)[0], node, None)


def _except_handler(node: ast.ExceptHandler) -> Iterator[Binding]:
    if node.name:
        yield Binding(node.name, node, None)


_BINDERS: dict[type, Callable[[Any], Iterator[Binding]]] = {
    ast.Assign: _assign, ast.AnnAssign: _ann_assign, ast.AugAssign: _aug_assign, ast.For: _loop,
    ast.AsyncFor: _loop, ast.withitem: _with_item, ast.NamedExpr: _walrus, ast.FunctionDef: _definition,
    ast.AsyncFunctionDef: _definition, ast.ClassDef: _definition, ast.Import: _import, ast.ImportFrom: _import,
    ast.ExceptHandler: _except_handler,
}


def _scope_statements(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """The statements of a scope, `with` items and `except` handlers in iter_scope's order
    (pre-order, fields in order), without expressions: every binding but a walrus's."""
    stack: list[ast.AST] = list(reversed(body))
    pop, extend = stack.pop, stack.extend
    while stack:
        node = pop()
        yield node
        if isinstance(node, _NESTED_SCOPES):
            continue
        if isinstance(node, (ast.With, ast.AsyncWith)):
            yield from node.items
        children: list[ast.AST] = []
        for field in statement_fields(type(node)):
            children.extend(getattr(node, field))
        if children:
            children.reverse()
            extend(children)


class Assignments:
    """'This name was assigned from X' within one scope, in source order. `walrus` False:
    the file has no `:=`, so only statements bind and expressions are not walked."""

    def __init__(self, scope: Scope, walrus: bool = True) -> None:
        self.scope = scope
        self.by_name: dict[str, list[Binding]] = {}
        self._latest: dict[tuple[str, bool], tuple[list[int], list[Binding]]] = {}
        self.declared_outside: set[str] = set()  # `global` / `nonlocal` names
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            for binding in _parameters(scope.args):
                self._add(binding)
        body: list[ast.stmt] = scope.body if isinstance(scope.body, list) else [ast.Expr(scope.body)]
        for node in (iter_scope(body) if walrus else _scope_statements(body)):
            binder = _BINDERS.get(type(node))
            if binder is not None:
                for binding in binder(node):
                    self._add(binding)
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                self.declared_outside.update(node.names)

    def _add(self, binding: Binding) -> None:
        self.by_name.setdefault(binding.name, []).append(binding)

    def local_names(self) -> frozenset[str]:
        """Names local to this scope (what Python's compiler would make local)."""
        return frozenset(self.by_name).difference(self.declared_outside)

    def get(self, name: str) -> list[Binding]:
        return self.by_name.get(name, [])

    def last_before(self, name: str, lineno: int, skip_augmented: bool = False) -> Optional[Binding]:
        """The binding of `name` that reaches line `lineno` in straight-line code: the last one
        (in source order) on or above that line; with `skip_augmented`, `x += ...` does not
        count. A sorted index per name makes each question O(log n), so a name bound and
        read thousands of times stays linear."""
        index = self._latest.get((name, skip_augmented))
        if index is None:
            index = self._latest[(name, skip_augmented)] = self._latest_index(name, skip_augmented)
        lines, latest = index
        k = bisect_right(lines, lineno)
        return latest[k - 1] if k else None

    def _latest_index(self, name: str, skip_augmented: bool) -> tuple[list[int], list[Binding]]:
        """Line numbers in ascending order and, for each prefix, the binding that comes last in
        source order among those lines (bindings are not quite in line order: a `with` item
        has no line number and counts as line 0)."""
        bindings = [(b.lineno, i, b) for i, b in enumerate(self.get(name))
                    if not (skip_augmented and isinstance(b.node, ast.AugAssign))]
        bindings.sort(key=lambda t: (t[0], t[1]))
        lines: list[int] = []
        latest: list[Binding] = []
        best: Optional[tuple[int, Binding]] = None
        for lineno, i, b in bindings:
            if best is None or i > best[0]:
                best = (i, b)
            lines.append(lineno)
            latest.append(best[1])
        return lines, latest

    def sole_value(self, name: str) -> Optional[ast.AST]:
        """The value when `name` is bound exactly once, by a plain assignment."""
        bindings = self.get(name)
        if len(bindings) == 1 and bindings[0].value is not None and bindings[0].index is None \
                and isinstance(bindings[0].node, (ast.Assign, ast.AnnAssign)):
            return bindings[0].value
        return None
