"""TL120: a runtime check of `torchlint run`, with its monitor (what the program records) and judge."""

from __future__ import annotations

from collections import defaultdict

from torchlint.diagnostics import Finding
import torchlint.runtime.judging as run
from torchlint.runtime.checks import RuntimeCheck

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional
    from pathlib import Path


class GradientlessParameterMonitor:
    """At each optimizer step, the parameters that require grad but have no `.grad` (`dead`),
    and the plain tensors without requires_grad (`inert`), added to the `step` event."""

    def step(self, m: Any, optimizer: Any, site: Optional[list], event: dict) -> None:
        import torch

        every = [p for group in optimizer.param_groups for p in group["params"]]
        dead = [p for p in every if p.requires_grad and p.grad is None]
        # A plain tensor (not an nn.Parameter) without requires_grad can never get a gradient: a
        # forgotten requires_grad=True. Frozen nn.Parameters are deliberate and not reported.
        inert = [p for p in every if not p.requires_grad and not isinstance(p, torch.nn.Parameter)]
        names = m.parameter_names() if dead or inert else {}

        def label(p: Any) -> str:
            return names.get(id(p), f"<tensor of shape {tuple(p.shape)}>")

        event.update(dead=[label(p) for p in dead], inert=[label(p) for p in inert])


class ParameterWithoutGradient(RuntimeCheck):
    """Runtime-only check: reported by `torchlint run` and `check_training_step`, at the
    `optimizer.step()` call.

    ## What it does
    At every optimizer step it looks at the parameters the optimizer updates that have
    `requires_grad=True`, and reports those whose `.grad` was still `None` at **every** observed
    step: they never took part in a loss that was backpropagated. It also reports plain tensors
    (not `nn.Parameter`) given to the optimizer with `requires_grad=False`: a forgotten
    `requires_grad=True`, since nothing can ever give them a gradient.

    ## Why is this bad?
    A parameter that never receives a gradient never learns. The usual causes are a layer built
    in `__init__` but never called in `forward` (a dead branch), an output that is computed but
    left out of the loss, or a `.detach()` / `torch.no_grad()` that cuts the graph before it. Under
    DDP the same layer makes `find_unused_parameters=False` fail, and turning that flag on only
    hides the dead branch while it costs an extra graph traversal each step. `nn.Parameter`s with
    `requires_grad=False` (deliberately frozen) are not reported.

    ## Example
    ```python
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(8, 16)
            self.head = nn.Linear(16, 3)
            self.aux_head = nn.Linear(16, 3)  # never used in forward

        def forward(self, x):
            return self.head(self.body(x).relu())
    ```

    ## Use instead
    ```python
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(8, 16)
            self.head = nn.Linear(16, 3)

        def forward(self, x):
            return self.head(self.body(x).relu())
    ```
    Or freeze what must not train (`p.requires_grad_(False)`) and leave it out of the optimizer.

    ## Fix safety
    No automatic fix: only the author knows whether the branch is dead or the loss is incomplete.

    ## References
    - [DistributedDataParallel: find_unused_parameters](https://pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html)
    - [Autograd mechanics](https://pytorch.org/docs/stable/notes/autograd.html)
    """

    code = "TL120"
    name = "parameter-without-gradient"
    summary = "Parameters the optimizer updates received no gradient in any observed step"
    peer_checks = {"TA104": "covered", "TA500": "partly: TL120 reports the unused layer's parameters when an optimizer updates them"}  # rules_docs/peer-parity.md
    seen = "parameters the optimizer updates never received a gradient"
    monitor = GradientlessParameterMonitor
    severity = "warning"

    @classmethod
    def problems(cls, obs: run.Observation, static: list[Finding], cwd: Path) -> list[run.RuntimeProblem]:
        """The run's findings of this check."""
        by_site: dict[tuple, list[dict]] = defaultdict(list)
        for e in obs.by_kind["step"]:
            by_site[(tuple(e["site"][:2]) if e["site"] else None, e["pid"])].append(e)
        out = []
        for steps in by_site.values():
            inert = steps[0].get("inert") or []
            if inert:
                shown = ", ".join(f"`{n}`" for n in inert[:6]) + (", ..." if len(inert) > 6 else "")
                out.append(run.RuntimeProblem(cls.code, steps[0]["site"],
                                              f"{len(inert)} of the {steps[0]['count']} tensors given to "
                                              f"{steps[0]['optimizer']} are plain tensors with requires_grad=False, so "
                                              f"they can never receive a gradient: {shown}"))
                continue
            never = set(steps[0].get("dead", [])).intersection(*(set(e.get("dead", [])) for e in steps[1:]))
            if never:
                names = [n for n in steps[0].get("dead", []) if n in never]
                shown = ", ".join(f"`{n}`" for n in names[:6]) + (", ..." if len(names) > 6 else "")
                out.append(run.RuntimeProblem(cls.code, steps[0]["site"],
                                              f"{len(names)} of {steps[0]['total']} parameters that require grad received "
                                              f"no gradient in any of the {len(steps)} {steps[0]['optimizer']} step(s): "
                                              f"{shown}"))
        return out
