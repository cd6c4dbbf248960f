"""The training-step model: in one loop or function body, where a forward pass, a loss, a
`backward()` and an optimizer `step()` happen, and which lines lie between the forward that
built a loss and that loss's `backward()` -- the window in which a tensor saved for backward
can still be changed under the graph's feet. Same-file calls are followed one level: a
helper that calls `backward()` is a backward, a helper called inside a window runs inside it.

Built lazily, once per file, by the first rule that asks (`training_steps(model)`): one
walk over the file, then one pass per loop or function body that calls `backward()`."""

from __future__ import annotations

import ast

from torchlint.analysis.loops import is_backward, is_optimizer_step, method_name, receiver_name
from torchlint.analysis.nodes import child_list, iter_children
from torchlint.analysis.scopes import FUNCTION_TYPES
from torchlint.analysis.semantic import SemanticModel
from torchlint.fast_dataclass import dataclass, field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterator, Optional, Union

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
if TYPE_CHECKING:
    _AnyFunction = Union[ast.FunctionDef, ast.AsyncFunctionDef]
# `<wrapper>.backward(loss)`: the loss is the argument, not the receiver.
_BACKWARD_WRAPPERS = frozenset({"accelerator", "fabric", "engine", "model_engine", "deepspeed", "trainer",
                                "self", "amp", "optimizer"})
# Calls that build no graph (fresh tensors, data moves, batch fetches): an assignment made only
# of these prepares the inputs, so it does not open a window (`z = torch.randn(n, 100)` before
# a weight clip that precedes the generator's forward).
_NO_GRAPH_FUNCTIONS = frozenset({
    f"torch.{name}" for name in ("randn", "rand", "randint", "randperm", "randn_like", "rand_like",
                                 "randint_like", "zeros", "ones", "full", "empty", "zeros_like",
                                 "ones_like", "full_like", "empty_like", "tensor", "as_tensor",
                                 "from_numpy", "arange", "linspace", "eye", "manual_seed")
}) | {"next", "len", "range", "zip", "enumerate", "iter", "int", "float", "list", "tuple"}
_NO_GRAPH_METHODS = frozenset({"to", "cuda", "cpu", "float", "half", "double", "long", "int", "bool", "size",
                               "numel", "detach", "item", "numpy", "tolist", "pin_memory", "contiguous"})


@dataclass(frozen=True)
class Window:
    """Lines `start` (the first call feeding the loss) to `end` (its backward), one body."""

    start: int
    end: int

    def holds(self, lineno: int) -> bool:
        return self.start < lineno < self.end


@dataclass
class BodySteps:
    """What one loop body or function body does at its own level (nested loops excluded)."""

    node: ast.AST
    backwards: list[ast.Call] = field(default_factory=list)
    steps: list[ast.Call] = field(default_factory=list)
    windows: list[Window] = field(default_factory=list)

    def in_window(self, lineno: int) -> bool:
        return any(w.holds(lineno) for w in self.windows)


def own_level(node: ast.AST) -> Iterator[ast.AST]:
    """Every node of a loop's or function's body, not entering nested loops, functions,
    lambdas or classes: what runs once per pass of this body."""
    body = node.body if isinstance(node.body, list) else [node.body]  # type: ignore[attr-defined]
    stack: list[ast.AST] = list(reversed(body))
    while stack:
        sub = stack.pop()
        yield sub
        if isinstance(sub, _SCOPES) or isinstance(sub, _LOOPS):
            continue
        stack.extend(reversed(child_list(sub)))


def _read_names(expr: Optional[ast.AST]) -> set[str]:
    """Names whose values flow into `expr`; a called name (`model(x)`, `self.crit(o, y)`)
    is the function, not data, so its own construction does not open a window."""
    found: set[str] = set()
    if expr is None:
        return found
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and not _rooted_at_self(func):
                stack.append(func.value)  # `out.sum()`: out is data
            stack.extend(node.args)
            stack.extend(k.value for k in node.keywords)
        elif isinstance(node, _SCOPES):
            continue
        else:
            stack.extend(iter_children(node))
    return found


def _rooted_at_self(node: ast.AST) -> bool:
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name) and node.id in ("self", "cls")


def loss_of_backward(call: ast.Call, model: SemanticModel) -> list[ast.AST]:
    """The expressions a backward call differentiates: `loss` in `loss.backward()`,
    `scaler.scale(loss).backward()`, `accelerator.backward(loss)`, `torch.autograd.backward(loss)`."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in ("backward", "manual_backward"):
        if func.attr == "manual_backward" or (call.args and receiver_name(call).lower() in _BACKWARD_WRAPPERS) \
                or model.call_name(call) == "torch.autograd.backward":
            return list(call.args[:1])
        return [func.value]
    return list(call.args[:1])


class TrainingSteps:
    """Per-file answers to "is this line between a forward and its backward?"."""

    def __init__(self, model: SemanticModel) -> None:
        self.model = model
        self._bodies: dict[int, BodySteps] = {}
        self._methods: dict[int, dict[str, _AnyFunction]] = {}  # id(class) -> its methods
        self._owner: dict[int, ast.ClassDef] = {}  # id(method) -> its class
        self._functions: dict[str, _AnyFunction] = {}
        self._backward_helpers: dict[int, bool] = {}
        self._in_window: Optional[set[int]] = None
        # Scopes (functions, or the module) whose own code calls something named `backward`:
        # only they can hold a window, so only they are ever analysed.
        self._with_backward: list[ast.AST] = []
        marked: set[int] = set()
        stack: list[tuple[ast.AST, ast.AST]] = [(model.tree, model.tree)]
        while stack:  # the one walk: classes, their methods, every def, backward calls
            node, scope = stack.pop()
            if isinstance(node, FUNCTION_TYPES):
                scope = node
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr.endswith("backward") and id(scope) not in marked:
                marked.add(id(scope))
                self._with_backward.append(scope)
            elif isinstance(node, ast.ClassDef):
                methods = self._methods[id(node)] = {}
                for stmt in node.body:
                    if isinstance(stmt, FUNCTION_TYPES):
                        methods[stmt.name] = stmt
                        self._owner[id(stmt)] = node
            stack.extend((child, scope) for child in iter_children(node))
        for stmt in model.tree.body:
            if isinstance(stmt, FUNCTION_TYPES):
                self._functions[stmt.name] = stmt

    @property
    def has_backward(self) -> bool:
        return bool(self._with_backward)

    # -- same-file calls -------------------------------------------------------
    def callee(self, call: ast.Call, scope: ast.AST) -> Optional[_AnyFunction]:
        """The same-file function `call` (made in `scope`) runs: a module-level def, or
        `self.method()` of the class that owns `scope`."""
        func = call.func
        if isinstance(func, ast.Name):
            return self._functions.get(func.id)
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            cls = self._owner.get(id(scope))
            return self._methods.get(id(cls), {}).get(func.attr) if cls is not None else None
        return None

    def _is_backward(self, call: ast.Call) -> bool:
        """A backward, or Lightning's `self.manual_backward(loss)`."""
        return is_backward(call, self.model) or method_name(call) == "manual_backward"

    def _calls_backward(self, fn: _AnyFunction) -> bool:
        found = self._backward_helpers.get(id(fn))
        if found is None:
            found = self._backward_helpers[id(fn)] = any(
                isinstance(n, ast.Call) and self._is_backward(n) for n in own_level(fn))
        return found

    def _builds_graph(self, value: ast.AST) -> bool:
        """Does `value` call something that may run a forward (not only make or move inputs)?"""
        for node in ast.walk(value):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in _NO_GRAPH_METHODS:
                continue
            name = self.model.call_name(node) or (func.id if isinstance(func, ast.Name) else None)
            if name not in _NO_GRAPH_FUNCTIONS:
                return True
        return False

    # -- bodies ----------------------------------------------------------------
    def body(self, node: ast.AST, scope: Optional[ast.AST] = None) -> BodySteps:
        """The steps of a loop body or function body (`scope`: the function it is in)."""
        found = self._bodies.get(id(node))
        if found is None:
            found = self._bodies[id(node)] = self._build(node, scope if scope is not None else node)
        return found

    def _build(self, node: ast.AST, scope: ast.AST) -> BodySteps:
        steps = BodySteps(node)
        assignments: list[tuple[int, set[str], set[str], bool]] = []
        losses: list[tuple[int, list[ast.AST]]] = []
        for sub in own_level(node):
            if isinstance(sub, ast.Call):
                if self._is_backward(sub):
                    steps.backwards.append(sub)
                    losses.append((sub.lineno, loss_of_backward(sub, self.model)))
                elif is_optimizer_step(sub):
                    steps.steps.append(sub)
                else:
                    fn = self.callee(sub, scope)
                    if fn is not None and fn is not scope and self._calls_backward(fn):
                        steps.backwards.append(sub)
                        losses.append((sub.lineno, list(sub.args)))
            elif isinstance(sub, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target]
                names = {t.id for tgt in targets for t in ast.walk(tgt) if isinstance(t, ast.Name)}
                reads = _read_names(sub.value)
                if isinstance(sub, ast.AugAssign):
                    reads |= names
                has_call = sub.value is not None and self._builds_graph(sub.value)
                assignments.append((sub.lineno, names, reads, has_call))
        assignments.sort(key=lambda a: a[0])
        for end, exprs in losses:
            wanted: set[str] = set()
            for expr in exprs:
                wanted |= _read_names(expr)
            start = None
            for lineno, names, reads, has_call in reversed(assignments):
                if lineno >= end or not (names & wanted):
                    continue
                wanted |= reads
                if has_call:
                    start = lineno
            if start is not None:
                steps.windows.append(Window(start, end))
        return steps

    # -- functions that run inside a window --------------------------------------
    def runs_in_window(self, fn: ast.AST) -> bool:
        """Is this function called, in this file, between a forward and its backward (or
        by the call that starts the window: `loss = compute_loss(...)`)?"""
        if self._in_window is None:
            self._in_window = set()
            for scope in self._with_backward:
                for body in [scope, *(n for n in own_level_all(scope) if isinstance(n, _LOOPS))]:
                    steps = self.body(body, scope)
                    if not steps.windows:
                        continue
                    for sub in own_level(body):
                        if isinstance(sub, ast.Call):
                            callee = self.callee(sub, scope)
                            if callee is not None and any(w.start <= sub.lineno < w.end for w in steps.windows):
                                self._in_window.add(id(callee))
        return id(fn) in self._in_window


def own_level_all(scope: ast.AST) -> Iterator[ast.AST]:
    """Every node of a function (or module), nested loops included, nested functions not."""
    body = scope.body if isinstance(scope.body, list) else [scope.body]  # type: ignore[attr-defined]
    stack: list[ast.AST] = list(reversed(body))
    while stack:
        sub = stack.pop()
        yield sub
        if not isinstance(sub, _SCOPES):
            stack.extend(reversed(child_list(sub)))


def training_steps(model: SemanticModel) -> TrainingSteps:
    """The file's training-step model, built once and shared by every rule that asks."""
    key = ("training_steps",)
    found = model.memo.get(key)
    if found is None:
        found = model.memo[key] = TrainingSteps(model)
    return found  # type: ignore[return-value]


def current_body(model: SemanticModel) -> tuple[ast.AST, ast.AST]:
    """(the innermost loop or function the walk is in, its function or the module)."""
    scope = model.function if model.function is not None else model.tree
    return (model.loops[-1] if model.loops else scope), scope


def in_forward_backward_window(model: SemanticModel, lineno: int) -> bool:
    """Can a tensor saved for backward be changed at this line: it lies between a forward
    and its `backward()` in the same loop or function body, the function is a `forward()`,
    or the function is called (in this file) inside such a window."""
    fn = model.function
    if fn is not None and getattr(fn, "name", "") == "forward":
        return True
    steps = training_steps(model)
    if not steps.has_backward:
        return False
    scope = fn if fn is not None else model.tree
    # The innermost loop first, then the loops around it: a write in `for p in params:`
    # inside the batch loop runs in that batch's window.
    for body in [*reversed(model.loops), scope]:
        if steps.body(body, scope).in_window(lineno):
            return True
    return fn is not None and steps.runs_in_window(fn)


def trains(node: ast.AST, model: SemanticModel) -> bool:
    """Does this loop (or function) call `backward()` or an optimizer `step()`, itself or
    through a same-file function it calls?"""
    return any(is_backward(c, model) or is_optimizer_step(c) for c in model.followed_calls(node))
