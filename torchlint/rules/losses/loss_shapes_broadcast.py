"""TL423: a runtime check of `torchlint run`, with its monitor (what the program records) and judge."""

from __future__ import annotations

from collections import defaultdict

from torchlint.diagnostics import Finding
import torchlint.runtime.judging as run
from torchlint.runtime.checks import RuntimeCheck

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any
    from pathlib import Path


class LossBroadcastMonitor:
    """A watched loss whose input and target broadcast to a shape with more elements than
    either (`(N, 1)` against `(N,)` is `(N, N)`): the broadcast shape, added to its `loss` event
    as `broadcast` with whether the input requires grad. Shapes only: no device sync."""

    ELEMENTWISE = ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div", "poisson_nll_loss",
                   "gaussian_nll_loss")

    def loss(self, m: Any, name: str, inp: Any, target: Any, event: dict, budget: bool) -> None:
        if name not in self.ELEMENTWISE or inp.shape == target.shape:
            return
        import torch

        try:
            shape = torch.broadcast_shapes(inp.shape, target.shape)
        except RuntimeError:
            return  # the loss itself raises
        if shape.numel() > max(inp.numel(), target.numel()):
            event["broadcast"] = list(shape)
            event["input_requires_grad"] = inp.requires_grad


class LossShapesBroadcast(RuntimeCheck):
    """Runtime-only check: reported by `torchlint run` and `check_training_step`, at the loss
    call.

    ## What it does
    Watches the element-wise losses (`mse_loss`, `l1_loss`, `smooth_l1_loss`, `huber_loss`,
    `kl_div`, `poisson_nll_loss`, `gaussian_nll_loss`, functional or as `nn` modules) and
    reports a call whose input and target have different shapes that broadcast to a shape
    larger than both, such as a prediction of shape `(N, 1)` against a target of shape `(N,)`,
    which broadcast to `(N, N)`, when the loss reduces (`'mean'` or `'sum'`) and its input
    requires grad (the loss trains). A call with `reduction='none'` is not reported: the
    program gets the broadcast result itself and decides what it means (a pairwise matrix,
    reshaped after). Neither is a target that broadcasts into the input's shape (a constant
    target, a per-column value), since the result is no larger than the input.

    ## Why is this bad?
    Broadcasting compares every prediction with every target: the loss is an average over
    N² wrong pairs, its gradient pulls every output towards the mean target, and the model
    trains to predict a constant while the loss still goes down. torch only warns for some of
    these losses (`mse_loss`, `l1_loss` and the Huber pair), and says nothing for `kl_div`,
    `poisson_nll_loss` and `gaussian_nll_loss`; a warning in a long log is easy to miss.
    Losses written by hand (`((pred - y) ** 2).mean()`) are not watched.

    ## Example
    ```python
    pred = model(x)                  # (N, 1): a regression head with one output
    loss = F.mse_loss(pred, y)       # y is (N,): the loss is over an (N, N) matrix
    ```

    ## Use instead
    ```python
    pred = model(x).squeeze(-1)      # (N,)
    loss = F.mse_loss(pred, y)
    ```

    ## Fix safety
    No automatic fix: which side to reshape depends on the model.

    ## References
    - [Broadcasting semantics](https://pytorch.org/docs/stable/notes/broadcasting.html)
    - [torch.nn.functional.mse_loss](https://pytorch.org/docs/stable/generated/torch.nn.functional.mse_loss.html)
    """

    code = "TL423"
    name = "loss-shapes-broadcast"
    summary = "A loss's input and target broadcast to a larger shape than either"
    seen = "a loss over broadcast shapes: (N, 1) against (N,) became (N, N)"
    monitor = LossBroadcastMonitor

    @classmethod
    def problems(cls, obs: run.Observation, static: list[Finding], cwd: Path) -> list[run.RuntimeProblem]:
        """The run's findings of this check."""
        by_site: dict[Any, list[dict]] = defaultdict(list)
        for e in obs.by_kind["loss"]:
            if e.get("broadcast") and e.get("input_requires_grad") and e.get("reduction") != "none" and "error" not in e:
                by_site[run.site_key(e["site"])].append(e)
        out = []
        for calls in by_site.values():
            e = calls[0]
            fn = f"nn.{e['module']}" if e.get("module") else f"F.{e['fn']}"
            out.append(run.RuntimeProblem(cls.code, e["site"],
                                          f"{fn} got input {run.shape(e['input'])} and target {run.shape(e['target'])}, "
                                          f"which broadcast to {tuple(e['broadcast'])}: the {e['reduction']} is over "
                                          f"every prediction-target pair, not the matching ones (reshape one side)"))
        return out
