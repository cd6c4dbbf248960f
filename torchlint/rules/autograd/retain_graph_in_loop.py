"""TL111: `backward(retain_graph=True)` in a training loop with no second backward in the iteration."""

from __future__ import annotations

import ast

from torchlint.analysis import inference
from torchlint.analysis.loops import is_backward, is_optimizer_step, method_name
from torchlint.analysis.training_step import loss_of_backward
from torchlint.checker import FileContext
from torchlint.rules.base import Evidence, Rule, Violation, keyword, literal


def probe_retain_graph(params: dict, device: str) -> tuple[str, str]:
    """A recurrent state carried across iterations without `.detach()`, stepped with
    `backward(retain_graph=True)`: the graph that backward walks grows every iteration. With
    facts `second_backward`, the iteration runs a second backward through the retained graph,
    which is what `retain_graph=True` is for."""
    import torch

    w = torch.randn(4, 4, device=device, requires_grad=True)
    if params.get("second_backward"):
        out = torch.tanh(torch.ones(1, 4, device=device) @ w)
        out.sum().backward(retain_graph=True)
        out.pow(2).sum().backward()  # needs the retained buffers
        return "not-reproduced", "the second backward of the iteration used the retained graph"

    def nodes(fn: object) -> int:
        seen, stack = set(), [fn]
        while stack:
            f = stack.pop()
            if f is None or id(f) in seen:
                continue
            seen.add(id(f))
            stack.extend(n for n, _ in getattr(f, "next_functions", ()))
        return len(seen)

    h = torch.zeros(1, 4, device=device)
    sizes = []
    for _ in range(4):
        h = torch.tanh(h @ w)
        loss = h.sum()
        loss.backward(retain_graph=True)
        sizes.append(nodes(loss.grad_fn))
    if sizes[-1] > sizes[0]:
        return "confirmed", (f"with a carried state and retain_graph=True, the graph backward walked grew "
                             f"{sizes} nodes over 4 iterations (memory and time grow every step)")
    return "not-reproduced", f"the graph stayed at {sizes} nodes"


def _retains(call: ast.Call) -> bool:
    kw = keyword(call, "retain_graph")
    return kw is not None and literal(kw.value) is True and keyword(call, "create_graph") is None


def _another_backward(call: ast.Call, node: ast.Call, ctx: FileContext) -> bool:
    """A second backward in the iteration: `backward`, `autograd.grad`, a same-file helper's."""
    if call is node:
        return False
    return is_backward(call, ctx) or method_name(call) == "manual_backward" \
        or ctx.call_name(call) == "torch.autograd.grad"


class RetainGraphWithoutSecondBackward(Violation):
    help = "Detach what is carried across iterations and drop `retain_graph=True`"

    def message(self) -> str:
        return "`retain_graph=True`, no second backward in the iteration: wasted memory, or a missing `.detach()`"


class RetainGraphInLoop(Rule):
    """## What it does
    Flags `loss.backward(retain_graph=True)` (and `torch.autograd.backward(..., retain_graph=True)`)
    in a training loop, that is one whose iteration also calls an optimizer `step()`, when
    nothing else in the iteration differentiates again: no other `backward()`, no
    `torch.autograd.grad`, no same-file helper that calls one. The loss must be computed in
    the same loop body, and the loop must not read a tensor that a model computed before it
    (`feats = encoder(x)` above the loop): a loss built once, or a shared part built once,
    is differentiated again by every iteration, which needs the retained graph. For the same
    reason it stays silent when a parameter of the enclosing function that the loop never
    rebinds is an argument of a call computing the loss (`def train(X, target_Y)`, then
    `l = loss_fn(extract(X), target_Y)`): the caller may have built that target through a
    model. `create_graph=True` (higher-order gradients) and a `retain_graph` given as a
    variable are left out.

    ## Why is this bad?
    `retain_graph=True` keeps the graph's saved tensors after backward so that a second backward
    can walk it. With no second backward in the iteration, it only keeps memory: the old graph
    stays alive until the loss name is rebound, so the next forward runs with two graphs'
    buffers held. Often it was
    added to silence `RuntimeError: Trying to backward through the graph a second time`, which
    the *next* iteration raised because a tensor carried across iterations (an RNN hidden
    state, a running statistic) was not detached: then each backward walks every past
    iteration's graph too, so memory and step time grow without bound, and gradients flow into
    old steps. Checked on torch 2.13: with a carried state and `retain_graph=True`, the graph
    walked by backward grew from 4 to 10 nodes over 4 iterations.

    ## Example
    ```python
    for x, y in loader:
        out, hidden = rnn(x, hidden)
        loss = criterion(out, y)
        optimizer.zero_grad()
        loss.backward(retain_graph=True)
        optimizer.step()
    ```

    ## Use instead
    ```python
    for x, y in loader:
        hidden = hidden.detach()
        out, hidden = rnn(x, hidden)
        loss = criterion(out, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    ```

    ## Fix safety
    No automatic fix: the missing `.detach()` is elsewhere.

    ## References
    - [torch.Tensor.backward](https://pytorch.org/docs/stable/generated/torch.Tensor.backward.html)
    - [Autograd mechanics](https://pytorch.org/docs/stable/notes/autograd.html)
    """

    code = "TL111"
    name = "retain-graph-in-loop"
    summary = "backward(retain_graph=True) in a training loop with no second backward in the iteration"
    severity = "warning"
    tags = ("performance", "training-loop")
    requires_text = ("retain_graph",)
    evidence = Evidence(probe=probe_retain_graph)

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        if not ctx.loops or not _retains(node) or not is_backward(node, ctx):
            return
        loop = ctx.loops[-1]
        calls = ctx.followed_calls(loop)
        if not any(is_optimizer_step(c) for c in calls):
            return
        if any(_another_backward(c, node, ctx) for c in calls):
            return
        if not _loss_built_in(loop, node, ctx) or _reads_outside_graph(loop, ctx) \
                or _loss_reads_parameter(loop, node, ctx):
            return
        self.report(node, RetainGraphWithoutSecondBackward(), params={"second_backward": False})


def _loss_built_in(loop: ast.AST, node: ast.Call, ctx: FileContext) -> bool:
    """Is the differentiated value assigned inside the loop body (above the backward)?"""
    names = set()
    for expr in loss_of_backward(node, ctx):
        names |= {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)}
    if not names:
        return False
    for sub in ast.walk(loop):
        if isinstance(sub, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and sub.lineno < node.lineno and sub is not loop:
            targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target]
            if any(isinstance(t, ast.Name) and t.id in names for tgt in targets for t in ast.walk(tgt)):
                return True
    return False


def _reads_outside_graph(loop: ast.AST, ctx: FileContext) -> bool:
    """Does the loop read, without rebinding it, a tensor a model computed before the loop
    (`feats = encoder(x)`)? Then every iteration's backward walks that shared part again,
    which is what `retain_graph=True` is for."""
    read = {n.id for n in ast.walk(loop) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - _rebound_in(loop)
    for name in read:
        value = ctx.value_before(ast.Name(id=name), loop.lineno)  # type: ignore[attr-defined]
        if isinstance(value, ast.Call) and _forward_like(value, ctx):
            return True
    return False


def _rebound_in(loop: ast.AST) -> set[str]:
    """The names the loop (its own target included) assigns anywhere in its body."""
    return {t.id for n in ast.walk(loop) if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For))
            for tgt in (n.targets if isinstance(n, ast.Assign) else [n.target]) for t in ast.walk(tgt)
            if isinstance(t, ast.Name)}


# Methods whose arguments say where or how to put a tensor, not what it holds.
_PLACEMENT_METHODS = frozenset({"to", "cuda", "type", "view", "reshape", "expand", "permute", "repeat"})


def _loss_reads_parameter(loop: ast.AST, node: ast.Call, ctx: FileContext) -> bool:
    """Is a parameter of the enclosing function, never rebound by the loop, passed as an
    argument of a call the loss is computed by (`def train(X, target_Y)`, then
    `l = loss_fn(extract(X), target_Y)`)? Where it comes from is unknown: a target the caller
    computed through a model carries a graph that every iteration differentiates again,
    which is what `retain_graph=True` is for. Only direct call arguments count: a scalar
    operand (`loss / accum_steps`) or what a batch is fetched with (`get_batch(data, n)`)
    holds no graph of its own."""
    function = ctx.function
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    arguments = function.args
    parameters = {a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]} - {"self", "cls"}
    rebound = _rebound_in(loop)
    values: dict[str, list[ast.expr]] = {}
    for sub in ast.walk(loop):
        if isinstance(sub, (ast.Assign, ast.AugAssign)) and sub.lineno < node.lineno:
            for target in (sub.targets if isinstance(sub, ast.Assign) else [sub.target]):
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        values.setdefault(name.id, []).append(sub.value)
    losses: list[ast.AST] = []
    for expr in loss_of_backward(node, ctx):
        losses.append(expr)
        if isinstance(expr, ast.Name):
            losses.extend(values.get(expr.id, []))
    for expr in losses:
        for call in ast.walk(expr):
            if not isinstance(call, ast.Call) or (isinstance(call.func, ast.Attribute)
                                                  and call.func.attr in _PLACEMENT_METHODS):
                continue
            if any(isinstance(a, ast.Name) and a.id in parameters and a.id not in rebound for a in call.args):
                return True
    return False


def _forward_like(call: ast.Call, ctx: FileContext) -> bool:
    """`encoder(x)`, `self.backbone(x)`, a module of the file: a call that may build a graph
    (not a torch factory, not a method such as `model.init_hidden()`)."""
    func = call.func
    if isinstance(func, ast.Name):
        return ctx.call_name(call) is None and ctx.called_function(call) is None
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
        return True
    return inference.kind_of(func, ctx) == inference.MODULE
