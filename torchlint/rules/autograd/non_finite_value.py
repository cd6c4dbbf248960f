"""TL121: a runtime check of `torchlint run`, with its monitor (what the program records) and judge."""

from __future__ import annotations

import math
import weakref

from torchlint.diagnostics import Finding
import torchlint.runtime.judging as run
from torchlint.runtime.checks import RuntimeCheck

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional
    from pathlib import Path


class NonFiniteMonitor:
    """Where NaN/Inf first appears: a module's output (screened after every forward), the loss
    (before its backward), or a gradient (at the optimizer step). An output holding only -inf
    among finite values is a mask (causal attention, invalid actions) that a softmax or
    masked_fill turns into 0: it is kept as context, and reported only if a NaN/Inf follows."""

    def __init__(self) -> None:
        self.reported = False
        self.masked_inf: Optional[dict] = None  # the first -inf-only activation, for context
        self.last_screened: Any = lambda: None  # weakref to the last module output screened

    @staticmethod
    def finite(tensor: Any) -> bool:
        """All values finite? A sum screens (NaN and Inf survive it) at a fraction of the cost of
        isfinite(); only a non-finite sum, which large finite values can also give, is checked
        exactly."""
        import torch

        if not tensor.dtype.is_floating_point or not tensor.numel():
            return True
        if math.isfinite(float(tensor.detach().sum())):
            return True
        return bool(torch.isfinite(tensor.detach()).all())

    @staticmethod
    def only_negative_inf(tensor: Any) -> bool:
        """No NaN and no +inf (called on a tensor that is not all finite)."""
        import torch

        detached = tensor.detach()
        return not bool(torch.isnan(detached).any()) and not bool(torch.isposinf(detached).any())

    def report(self, m: Any, site: Optional[list], **data: Any) -> None:
        self.reported = True
        m.notes["nonfinite"] = True
        m.record("nonfinite", site, masked_inf=self.masked_inf, always=True, **data)

    def forward(self, m: Any, module: Any, args: Any, output: Any, root: bool) -> None:
        if self.reported:
            return
        outputs = m.tensors(output)
        if len(outputs) == 1 and outputs[0] is self.last_screened():
            return  # a container returning its last layer's output: already screened
        for tensor in outputs:
            self.last_screened = weakref.ref(tensor)
            if self.finite(tensor):
                continue
            names = {id(sub): n for r in list(m.roots) for n, sub in r.named_modules()}
            if self.only_negative_inf(tensor):
                if self.masked_inf is None:
                    self.masked_inf = {"module": type(module).__name__, "name": names.get(id(module)),
                                       "site": m.user.site(2), "step": m.steps}
                continue
            inputs_finite = all(self.finite(t) or self.only_negative_inf(t) for t in m.tensors(args))
            bad_params = [n for n, p in module.named_parameters(recurse=False) if not self.finite(p)]
            self.report(m, m.user.site(2), where="activation", module=type(module).__name__,
                        name=names.get(id(module)), inputs_finite=inputs_finite, output=m.describe(tensor),
                        bad_params=bad_params)
            return

    def before_backward(self, m: Any, loss: Any, site: Optional[list], fn: str) -> None:
        if self.reported or loss is None or loss.numel() != 1 or not loss.dtype.is_floating_point:
            return
        value = float(loss.detach())
        if not math.isfinite(value):
            self.report(m, site, where="loss", value=str(value))

    def step(self, m: Any, optimizer: Any, site: Optional[list], event: dict) -> None:
        if self.reported:
            return
        # A NaN or Inf gradient has a non-finite norm; a huge finite one may too, so those are
        # checked exactly. Without shared norms, each gradient is screened on its own.
        groups = m.gradient_norms(optimizer)
        held = ([(p, norm) for group in groups for p, norm in group] if groups is not None else
                [(p, math.nan) for group in optimizer.param_groups for p in group["params"] if p.grad is not None])
        for p, norm in held:
            if p.requires_grad and not math.isfinite(norm) and not self.finite(p.grad):
                self.report(m, site, where="gradient", name=m.parameter_names().get(id(p)), tensor=m.describe(p))
                return


class NonFiniteValue(RuntimeCheck):
    """Runtime-only check: reported by `torchlint run` and `check_training_step`.

    ## What it does
    Checks, during the observed steps, every module's forward output, the loss at `backward()`,
    and every gradient at `optimizer.step()`, and reports the **first** place a NaN or Inf
    appears: the module (and its name in the model), whether its inputs and its own parameters
    were still finite (so whether that layer produced it or received it), and the step.

    A `-inf` with no NaN and no `+inf` beside it is a mask (a causal attention mask, invalid
    actions in a policy), which a softmax or `masked_fill` turns into 0: it is not reported
    where it appears. It is reported, with the module that first held it, only if a NaN/Inf then
    reaches a later activation, the loss or a gradient, that is, only if it affects the training.

    ## Why is this bad?
    One NaN spreads through every later operation: the loss becomes NaN, the gradients become
    NaN, and after one optimizer step every weight is NaN. By the time the loss prints `nan` the
    origin is gone. Typical origins are `log`/`sqrt`/division of a value that reaches 0 or goes
    negative, an exploding activation in float16, or a learning rate that blows up the weights.
    `torch.autograd.detect_anomaly` finds NaNs produced in backward only, and slows every op.

    ## Example
    ```python
    class Net(nn.Module):
        def forward(self, x):
            return torch.log(self.linear(x))  # log of negative values is NaN
    ```

    ## Use instead
    ```python
    class Net(nn.Module):
        def forward(self, x):
            return F.log_softmax(self.linear(x), dim=-1)  # numerically stable
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [torch.autograd.detect_anomaly](https://pytorch.org/docs/stable/autograd.html#anomaly-detection)
    - [torch.isfinite](https://pytorch.org/docs/stable/generated/torch.isfinite.html)
    """

    code = "TL121"
    name = "non-finite-value"
    summary = "NaN or Inf first appeared in an activation, the loss or a gradient"
    peer_checks = {"TA100": "covered at run time: the first activation, loss or gradient that turns non-finite"}  # rules_docs/peer-parity.md
    seen = "where NaN/Inf first appeared: which layer, the loss or a gradient"
    monitor = NonFiniteMonitor

    @classmethod
    def problems(cls, obs: run.Observation, static: list[Finding], cwd: Path) -> list[run.RuntimeProblem]:
        """The run's findings of this check."""
        out = []
        for e in obs.by_kind["nonfinite"]:
            if e["where"] == "activation":
                what = f"`{e['name']}` ({e['module']})" if e.get("name") else e["module"]
                if e.get("bad_params"):
                    origin = f"whose own parameters {', '.join(e['bad_params'])} already held NaN/Inf"
                elif e["inputs_finite"]:
                    origin = "from finite inputs and parameters, so this layer's computation produced it"
                else:
                    origin = "and its input already held NaN/Inf from code between layers"
                message = (f"NaN/Inf first appeared at step {e['step']} in the output {run.shape(e['output'])} of {what}, "
                           f"{origin}")
            elif e["where"] == "loss":
                but = " but for -inf" if e.get("masked_inf") else ""
                message = f"the loss was {e['value']} at step {e['step']} while every layer output was finite{but}"
            else:
                message = (f"the gradient of `{e.get('name') or 'a parameter'}` {run.shape(e['tensor'])} held NaN/Inf at "
                           f"step {e['step']} while the loss and activations were finite"
                           f"{' but for -inf' if e.get('masked_inf') else ''}")
            masked = e.get("masked_inf")
            if masked:
                what = f"`{masked['name']}` ({masked['module']})" if masked.get("name") else masked["module"]
                message += (f"; before it, at step {masked['step']}, the output of {what} at {run.where(masked['site'], cwd)} "
                            "held -inf (a mask is harmless where a softmax or masked_fill consumes it; this one was not)")
            out.append(run.RuntimeProblem(cls.code, e["site"], message))
        return out
