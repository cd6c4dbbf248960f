"""TL101: `.backward()` / `torch.autograd.grad` on a tensor computed under no_grad."""

from __future__ import annotations

import ast

from torchlint.analysis.scopes import grad_mode_of, iter_scope
from torchlint.checker import FileContext
from torchlint.records import RuntimeResult
from torchlint.rules.base import Evidence, Rule, Violation, arg_or_keyword, dotted, keyword, literal
import torchlint.runtime.judging as run

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional
    from pathlib import Path


_AUTOGRAD_FUNCS = {"torch.autograd.backward": "tensors", "torch.autograd.grad": "outputs"}


def run_verdict(obs: run.Observation, path: str, rows: tuple[int, int], cwd: Path) -> RuntimeResult:
    """What the run shows: grad mode and graph at the `backward` call, the error."""
    calls, hits = run.calls_at(obs, "backward", path, rows)
    if not calls:
        return run.not_reached("no backward/grad call ran at this line")
    for e in calls:
        no_graph = not e.get("requires_grad") and not e.get("has_grad_fn")
        if no_graph and (not e["grad_enabled"] or "does not require grad" in (e.get("error") or "")):
            mode = "off" if not e["grad_enabled"] else "on"
            outcome = f"{e['fn']} raised {e['error']}" if e.get("error") else f"{e['fn']} had nothing to differentiate"
            return run.verdict("confirmed", f"at step {e['step']}, grad mode was {mode} at the call and the tensor "
                                            f"had no graph (requires_grad=False, grad_fn=None); {outcome}", hits)
    modes = sorted({"on" if e["grad_enabled"] else "off" for e in calls})
    return run.verdict("not-observed", f"ran {hits} time(s); grad mode was {'/'.join(modes)} and the tensor had a "
                                       "graph at every call", hits)


# -- evidence (runs only in the --verify worker: see CONTRIBUTING.md) ----------------------
def probe_backward_under_no_grad(params: dict, device: str) -> tuple[str, str]:
    import torch
    import torch.nn as nn
    from _evidence import first_line, raises

    mode = params.get("mode", "torch.no_grad")
    ctx = {"torch.no_grad": torch.no_grad, "torch.inference_mode": torch.inference_mode,
           "torch.set_grad_enabled": lambda: torch.set_grad_enabled(False)}.get(mode, torch.no_grad)
    model = nn.Linear(4, 2).to(device)
    x = torch.randn(3, 4, device=device)
    call = params.get("call", "backward")

    def attempt() -> None:
        with ctx():  # type: ignore[operator]
            loss = model(x).sum()
            if call.endswith("autograd.grad"):
                torch.autograd.grad(loss, list(model.parameters()))
            else:
                loss.backward()
    exc = raises(attempt)
    if exc is not None and "does not require grad" in str(exc):
        return "confirmed", first_line(exc)
    return "not-reproduced", f"{call} inside {mode} did not raise ({exc!r})"


def judge_backward_under_no_grad(facts: dict, runs: list) -> Optional[tuple[str, str]]:
    from _evidence import expect_raise, says

    def fine(rec: dict) -> str:
        fn = getattr(getattr(rec.get("func"), "__self__", None), "grad_fn", None)
        return f"the call ran: the differentiated tensor has grad_fn {type(fn).__name__ if fn else None}"
    return expect_raise(runs, says("does not require grad"), "the call", fine)


class BackwardOfNoGradResult(Violation):
    call: str  # `loss.backward()`, `torch.autograd.grad(...)`
    mode: str  # `no_grad`, `inference_mode`, ...
    help = "Compute the loss outside the grad-disabled block, or wrap it in `torch.enable_grad()`"

    def message(self) -> str:
        return f"`{self.call}` raises: its input, computed under `{self.mode}`, has no grad_fn"


class HelperBackwardUnderNoGrad(Violation):
    helper: str
    loss: str
    mode: str
    help = "Call it outside the grad-disabled block (or wrap its body in `torch.enable_grad()`)"

    def message(self) -> str:
        return (f"`{self.helper}()` calls `{self.loss}.backward()` under `{self.mode}`: "
                f"the loss it computes has no grad_fn, so it raises")


class BackwardUnderNoGrad(Rule):
    """## What it does
    Flags `.backward()`, `torch.autograd.backward(...)` and `torch.autograd.grad(...)` inside a
    grad-disabled region (`with torch.no_grad():`, `with torch.inference_mode():`,
    `with torch.set_grad_enabled(False):`, or a function decorated with `@torch.no_grad()` /
    `@torch.inference_mode()`) when the tensor being differentiated was computed inside that
    same region, e.g. a whole training loop wrapped in `no_grad`.

    ## Why is this bad?
    Under `no_grad` torch records no graph: the loss has no `grad_fn` and `requires_grad=False`.
    Calling backward on it does **not** fail silently (as some tutorials claim); torch raises

    ```
    RuntimeError: element 0 of tensors does not require grad and does not have a grad_fn
    ```

    so the job dies at the first step, often after a long data-loading warm-up, or in a code
    path (a fine-tuning branch, a rarely-used flag) that CI never runs.

    A call under such a region to a function of the same file (`train_step(batch)`,
    `self.train_step(batch)`) is flagged when that function computes a loss and calls its
    `backward()` on every path through it (not under an `if` or `try`), and sets no grad mode
    of its own (no decorator, no `with torch.enable_grad():`): the loss inherits the caller's
    `no_grad`.

    A region that only does the parameter update (`p -= lr * p.grad`) or computes metrics is
    correct and is not flagged. Neither is `backward()` under `no_grad` on a loss that was
    computed *before* the region (the graph already exists), nor code under
    `torch.enable_grad()` nested in the region.

    ## Example
    ```python
    with torch.no_grad():
        for x, y in loader:
            loss = F.cross_entropy(model(x), y)
            loss.backward()   # RuntimeError
            opt.step()
    ```

    ## Use instead
    ```python
    for x, y in loader:
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()

    with torch.no_grad():      # evaluation only
        val_loss = F.cross_entropy(model(xv), yv)
    ```

    ## Fix safety
    No automatic fix: where the region should end depends on intent.

    ## References
    - [torch.no_grad](https://pytorch.org/docs/stable/generated/torch.no_grad.html)
    - [Autograd mechanics: locally disabling gradient computation](https://pytorch.org/docs/stable/notes/autograd.html#locally-disabling-gradient-computation)
    """

    code = "TL101"
    name = "backward-under-no-grad"
    summary = "backward()/autograd.grad on a tensor computed inside a grad-disabled region"
    severity = "error"
    tags = ("correctness", "autograd")
    requires_text = ('backward', 'autograd')
    precision = "very-high"
    evidence = Evidence(probe=probe_backward_under_no_grad, slice="call", judge=judge_backward_under_no_grad,
                        runtime=run_verdict, crash=r"does not require grad and does not have a grad_fn")

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        region = ctx.grad_region
        if region is None or not region.disabled:
            return
        func = node.func
        name = ctx.call_name(node)
        if name not in _AUTOGRAD_FUNCS and isinstance(func, ast.Attribute) and func.attr == "backward":
            target: Optional[ast.AST] = func.value
            what = f"{dotted(func.value)}.backward()"
            call = "backward"
        elif name in _AUTOGRAD_FUNCS:
            target = arg_or_keyword(node, 0, _AUTOGRAD_FUNCS[name])
            what = f"{name}(...)"
            call = name
        else:
            self._check_helper(node, region.kind, ctx)
            return
        if target is None or not self._computed_in_region(target, region.node, node.lineno, ctx):
            return
        mode = region.kind.rsplit(".", 1)[1]
        self.report(node, BackwardOfNoGradResult(call=what, mode=mode), params={"mode": region.kind, "call": call})

    def _check_helper(self, call: ast.Call, kind: str, ctx: FileContext) -> None:
        """`train_step(batch)` under no_grad, where `train_step` (of this file) computes a
        loss and calls its `backward()` unconditionally: the loss inherits no_grad."""
        fn = ctx.called_function(call)
        if fn is None or ctx.called_module(call, fn) is not None or fn.decorator_list:
            return  # another file's helper, or one that may set its own grad mode
        key = ("unconditional-backward", id(fn))  # every call of it asks: its body is read once
        if key not in ctx.memo:
            ctx.memo[key] = _unconditional_backward(fn, ctx)
        backward = ctx.memo[key]
        if not isinstance(backward, str):
            return
        mode = kind.rsplit(".", 1)[1]
        self.report(call, HelperBackwardUnderNoGrad(helper=dotted(call.func), loss=backward, mode=mode),
                    params={"mode": kind, "call": "backward"})

    def _computed_in_region(self, target: ast.AST, region: ast.AST, lineno: int, ctx: FileContext) -> bool:
        if isinstance(target, (ast.Tuple, ast.List)):
            return any(self._computed_in_region(e, region, lineno, ctx) for e in target.elts)
        if isinstance(target, ast.Name):
            start = region.body[0].lineno  # type: ignore[attr-defined]
            end = region.end_lineno or lineno  # type: ignore[attr-defined]
            last = ctx.binding_before(target.id, lineno)
            if last is None:
                return False
            if isinstance(last.node, ast.arg) or not (start <= last.lineno <= end):
                return False
            # A leaf created with requires_grad=True inside the region still has grad.
            value = last.value
            if isinstance(value, ast.Call) and literal(getattr(keyword(value, "requires_grad"), "value", None)) is True:
                return False
            if isinstance(last.node, ast.AugAssign):
                return True
            return isinstance(last.node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and _computes(value)
        # Attributes and subscripts may hold anything computed elsewhere; any other
        # expression (a call, arithmetic) is evaluated right here, under no_grad.
        return _computes(target)


def _computes(expr: Optional[ast.AST]) -> bool:
    """Does evaluating `expr` run tensor operations (which record no graph under no_grad)?
    Collecting existing tensors (`[p.grad for p in params]`, `out[0]`) does not."""
    if isinstance(expr, ast.Call):
        if isinstance(expr.func, ast.Name) and expr.func.id in ("list", "tuple"):
            return any(_computes(a) for a in expr.args)
        return True
    if isinstance(expr, (ast.BinOp, ast.UnaryOp)):
        return True
    if isinstance(expr, (ast.List, ast.Tuple, ast.Set)):
        return any(_computes(e) for e in expr.elts)
    if isinstance(expr, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
        return _computes(expr.elt)
    if isinstance(expr, ast.Subscript):
        return _computes(expr.value)
    if isinstance(expr, ast.IfExp):
        return _computes(expr.body) or _computes(expr.orelse)
    return False


def _unconditional_backward(fn: ast.FunctionDef | ast.AsyncFunctionDef, ctx: FileContext) -> Optional[str]:
    """The name `fn` calls `.backward()` on on every path through it (not under an `if` or
    `try`), when `fn` computes it itself (one assignment, from tensor operations) and sets
    no grad mode of its own; else None."""
    if any(isinstance(n, (ast.With, ast.AsyncWith)) and any(grad_mode_of(i.context_expr, ctx.imports) is not None
                                                            for i in n.items) for n in iter_scope(fn.body)):
        return None  # the helper picks its own grad mode
    stack: list[ast.stmt] = list(fn.body)
    while stack:
        stmt = stack.pop()
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            stack.extend(stmt.body)
        elif isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
            stack.extend(stmt.body)
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            func = stmt.value.func
            if isinstance(func, ast.Attribute) and func.attr == "backward" and isinstance(func.value, ast.Name):
                name = func.value.id
                value = ctx.sole_value(name, fn)
                if value is not None and _computes(value) and not _leaf_requiring_grad(value) \
                        and name not in {a.arg for a in fn.args.args + fn.args.kwonlyargs}:
                    return name
    return None


def _leaf_requiring_grad(value: ast.AST) -> bool:
    return isinstance(value, ast.Call) and literal(getattr(keyword(value, "requires_grad"), "value", None)) is True
