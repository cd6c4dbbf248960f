"""TL910: `scheduler.get_lr()` read outside the scheduler; `get_last_lr()` is the API."""

from __future__ import annotations

import ast

from torchlint.analysis.dominance import reaches_here
from torchlint.checker import FileContext
from torchlint.edits import edit, end_of, make_fix
from torchlint.rules.base import Evidence, Rule, Violation, dotted

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional

_TORCH_SCHEDULERS = "torch.optim.lr_scheduler."
# transformers' schedule factories return a torch LambdaLR.
_HF_FACTORIES = ("transformers.get_", "transformers.optimization.get_")


def probe_get_lr(params: dict, device: str) -> tuple[str, str]:
    """The --verify fact probe: what `<scheduler>.<method>()` does after one step on this torch."""
    import warnings

    import torch

    name = str(params.get("scheduler", "StepLR"))
    method = str(params.get("method", "get_lr"))
    param = torch.nn.Parameter(torch.ones(1))
    opt = torch.optim.SGD([param], lr=0.1)
    makers = {"StepLR": lambda: torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.1),
              "ExponentialLR": lambda: torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5),
              "LambdaLR": lambda: torch.optim.lr_scheduler.LambdaLR(opt, lambda e: 1.0 / (e + 1))}
    if name not in makers:
        return "not-applicable", f"the probe does not build {name}"
    sched = makers[name]()
    opt.step()
    sched.step()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        read = getattr(sched, method)()
    warned = [str(w.message) for w in caught if "get_last_lr" in str(w.message)]
    last = sched.get_last_lr()
    if warned or read != last:
        what = f"warned {warned[0]!r}" if warned else "did not warn"
        return "confirmed", f"{name}.{method}() after one step {what} and returned {read}; the rate in use is {last}"
    return "not-reproduced", f"{name}.{method}() returned the rate in use ({last}) without a warning"


class GetLrCalled(Violation):
    call: str  # as written, `scheduler.get_lr()`
    help = "Use `get_last_lr()`"

    def message(self) -> str:
        return f"`{self.call[:40]}` is not the rate in use: torch warns, and chainable schedulers differ"


class SchedulerGetLr(Rule):
    """## What it does
    Flags `scheduler.get_lr()` where `scheduler` is known to be a `torch.optim.lr_scheduler`
    scheduler (constructed in this function or in the class's `__init__`, directly or through
    `transformers.get_*_schedule*`, which returns a `LambdaLR`). Calls inside a scheduler class
    (a subclass implementing `get_lr`, or `super().get_lr()`) and schedulers of unknown type are
    not flagged. Transformers' `AdafactorSchedule`, whose `get_lr` is its API, is not flagged.

    ## Why is this bad?
    `get_lr()` is the hook a scheduler's `step()` calls to compute the next rate; it is not a
    getter. Checked on torch 2.13: called outside `step()` it warns `To get the last learning rate
    computed by the scheduler, please use get_last_lr().`, and for the chainable schedulers it
    returns a wrong value: after one step of `StepLR(opt, step_size=1, gamma=0.1)` from lr 0.1,
    `get_lr()` returns `[0.001]` while the optimizer uses `0.01` (`get_last_lr()`). Logged
    learning-rate curves are then off by a step's factor.

    ## Example
    ```python
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=30)
    for step in range(steps):
        scheduler.step()
        writer.add_scalar("lr", scheduler.get_lr()[0], step)
    ```

    ## Use instead
    ```python
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=30)
    for step in range(steps):
        scheduler.step()
        writer.add_scalar("lr", scheduler.get_last_lr()[0], step)
    ```

    ## Fix safety
    Safe: `get_last_lr()` returns the list of rates the optimizer's groups use, the value
    `get_lr()` was read for; the only change is that the logged value is right and the warning
    goes away.

    ## References
    - [LRScheduler.get_last_lr](https://pytorch.org/docs/stable/generated/torch.optim.lr_scheduler.LRScheduler.html)
    - [How to adjust the learning rate](https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate)
    """

    code = "TL910"
    name = "scheduler-get-lr"
    summary = "`scheduler.get_lr()` read outside `step()` warns and can be wrong; use `get_last_lr()`"
    severity = "warning"
    tags = ("correctness", "deprecation")
    precision = "very-high"
    requires_text = ("get_lr",)
    evidence = Evidence(probe=probe_get_lr)

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        func = node.func
        if not isinstance(func, ast.Attribute) or func.attr != "get_lr" or node.args or node.keywords:
            return
        if ctx.classes and any(isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == "get_lr"
                               for s in ctx.classes[-1].body):
            return  # a scheduler subclass: get_lr is its own hook
        kind = self._scheduler(func.value, node.lineno, ctx)
        if kind is None:
            return
        end = end_of(ctx.source, node)
        start = (end[0], end[1] - len("get_lr()"))
        fix = make_fix("Use `get_last_lr()`", [edit(start, end, "get_last_lr()")]) \
            if ctx.source.line(end[0])[start[1] - 1:end[1] - 1] == "get_lr()" else None
        self.report(node, GetLrCalled(call=dotted(node)), params={"scheduler": kind, "method": "get_lr"}, fix=fix)

    def _scheduler(self, recv: ast.AST, lineno: int, ctx: FileContext) -> Optional[str]:
        """The scheduler's class name when `recv` is known to be a torch LR scheduler."""
        name: Optional[str] = None
        if isinstance(recv, ast.Name):
            binding = ctx.binding_before(recv.id, lineno - 1, module_fallback=True)
            if binding is not None and binding.index is None and isinstance(binding.node, ast.Assign) \
                    and reaches_here(ctx, binding.node):
                name = ctx.call_name(binding.value) if isinstance(binding.value, ast.Call) else None
        elif isinstance(recv, ast.Attribute) and isinstance(recv.value, ast.Name) and recv.value.id == "self":
            name = ctx.self_attribute_constructor(recv.attr)
        if name is None or "Adafactor" in name:
            return None
        if name.startswith(_TORCH_SCHEDULERS):
            return name[len(_TORCH_SCHEDULERS):]
        if name.startswith(_HF_FACTORIES) and "schedule" in name:
            return "LambdaLR"
        return None
