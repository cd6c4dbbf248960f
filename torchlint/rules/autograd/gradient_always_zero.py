"""TL122: a runtime check of `torchlint run`, with its monitor (what the program records) and judge."""

from __future__ import annotations

from collections import defaultdict
import weakref

from torchlint.diagnostics import Finding
import torchlint.runtime.judging as run
from torchlint.runtime.checks import RuntimeCheck

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional
    from pathlib import Path


class ZeroGradientMonitor:
    """At each optimizer's first CHECKED steps that follow a backward: how many of its trainable
    parameters held a gradient (`grads_checked`) and which of those gradients were exactly zero
    everywhere (`zero_grads`), added to the `step` event. One device sync per step and device."""

    CHECKED = 20  # steps per optimizer; later steps cost nothing

    def __init__(self) -> None:
        self.checked: Any = weakref.WeakKeyDictionary()  # optimizer -> steps checked

    def step(self, m: Any, optimizer: Any, site: Optional[list], event: dict) -> None:
        # Only fresh gradients: a zero_grad between the backward and the step is zero-grad-between-backward-and-step's.
        if not m.backward_since_step or (m.last_grad_event or ("",))[0] != "backward":
            return
        done = self.checked.get(optimizer, 0)
        if done >= self.CHECKED:
            return
        self.checked[optimizer] = done + 1
        import torch

        params = [p for group in optimizer.param_groups for p in group["params"]
                  if p.requires_grad and p.grad is not None and not p.grad.is_sparse and p.grad.numel()
                  and not p._backward_hooks]  # a hook may zero the gradient on purpose (a freeze)
        event["grads_checked"] = len(params)
        if not params:
            return
        norms = torch._foreach_norm([p.grad for p in params], float("inf"))
        by_device: dict[Any, list[int]] = {}
        for index, norm in enumerate(norms):
            by_device.setdefault(norm.device, []).append(index)
        zero = [False] * len(params)
        for indices in by_device.values():
            flags = torch.stack([norms[i] for i in indices]).eq(0).tolist()
            for i, flag in zip(indices, flags):
                zero[i] = flag
        if any(zero):
            names = m.parameter_names()
            event["zero_grads"] = [names.get(id(p), f"<tensor of shape {tuple(p.shape)}>")
                                   for p, flag in zip(params, zero) if flag]


class GradientAlwaysZero(RuntimeCheck):
    """Runtime-only check: reported by `torchlint run` and `monitored()`, at the
    `optimizer.step()` call.

    ## What it does
    At each optimizer's first 20 steps that follow a backward, it looks at the gradients of the
    parameters the optimizer updates, and reports the parameters whose gradient was exactly zero
    everywhere at **every** one of those steps (at least two). A parameter that is frozen
    (`requires_grad=False`, so no gradient at all), one whose loss term is masked for a step,
    and one with a gradient hook (which may zero it on purpose) are not reported; a missing
    gradient (`None`) is {rule:parameter-without-gradient}'s, a `zero_grad()` between the
    backward and the step {rule:zero-grad-between-backward-and-step}'s, and a `cross_entropy`
    over a single class (every gradient through it is zero) {rule:single-class-cross-entropy}'s.

    ## Why is this bad?
    A gradient that is zero at every step means the loss does not depend differentiably on the
    parameter: the optimizer steps, the loss is logged, and the model never learns. Usual causes
    are a non-differentiable operation inside the loss (`torch.round`, `floor`, `sign`, a
    comparison or `argmax` turned back into a float), a layer whose activations are all zero
    (dead ReLUs after a bad initialisation), or a loss term multiplied by a mask that is always
    zero. No error and no NaN say so.

    ## Example
    ```python
    pred = model(x)
    loss = F.mse_loss(torch.round(pred), y)  # round() has a zero gradient everywhere
    loss.backward()
    opt.step()
    ```

    ## Use instead
    ```python
    pred = model(x)
    loss = F.mse_loss(pred, y)  # round only when reporting a metric
    loss.backward()
    opt.step()
    ```

    ## Fix safety
    No automatic fix: the cause is in the loss or the model, not at the step.

    ## References
    - [Autograd mechanics](https://pytorch.org/docs/stable/notes/autograd.html)
    - [torch.round: its gradient is zero](https://pytorch.org/docs/stable/generated/torch.round.html)
    """

    code = "TL122"
    name = "gradient-always-zero"
    summary = "Parameters the optimizer updates had an all-zero gradient at every observed step"
    seen = "gradients exactly zero at every step: the parameters never learn"
    monitor = ZeroGradientMonitor
    severity = "warning"
    peer_checks = {"TA103": "covered at run time, more strictly: zero at every checked step, not for one batch"}  # rules_docs/peer-parity.md

    @classmethod
    def problems(cls, obs: run.Observation, static: list[Finding], cwd: Path) -> list[run.RuntimeProblem]:
        """The run's findings of this check."""
        # A single-class cross_entropy zeroes every gradient through it: single-class-cross-entropy names that cause.
        single_class = {e["pid"] for e in obs.by_kind["loss"] if e["fn"] == "cross_entropy" and e.get("classes") == 1}
        by_site: dict[tuple, list[dict]] = defaultdict(list)
        for e in obs.by_kind["step"]:
            if e.get("grads_checked") and e["pid"] not in single_class:
                by_site[(tuple(e["site"][:2]) if e["site"] else None, e["pid"], e["optimizer"])].append(e)
        out = []
        for steps in by_site.values():
            if len(steps) < 2:  # one step cannot tell a masked term from a dead parameter
                continue
            never = set(steps[0].get("zero_grads", [])).intersection(*(set(e.get("zero_grads", [])) for e in steps[1:]))
            if not never:
                continue
            names = [n for n in steps[0]["zero_grads"] if n in never]
            shown = ", ".join(f"`{n}`" for n in names[:6]) + (", ..." if len(names) > 6 else "")
            checked = steps[0]["grads_checked"]
            which = (f"all {checked} parameters with a gradient" if len(names) == checked
                     else f"{len(names)} of {checked} parameters with a gradient")
            out.append(run.RuntimeProblem(cls.code, steps[0]["site"],
                                          f"{which} had a gradient that was exactly zero at each of the {len(steps)} "
                                          f"{steps[0]['optimizer']} steps checked, so they never learn (a "
                                          f"non-differentiable op such as round/argmax in the loss, dead activations): "
                                          f"{shown}"))
        return out
