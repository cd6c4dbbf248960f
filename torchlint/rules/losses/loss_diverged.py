"""TL421: a runtime check of `torchlint run`, with its monitor (what the program records) and judge."""

from __future__ import annotations

import math

from torchlint.diagnostics import Finding
import torchlint.runtime.judging as run
from torchlint.runtime.checks import RuntimeCheck

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional
    from pathlib import Path


class DivergenceMonitor:
    """Each backward site's first three finite losses, and the first later loss that grew
    RATIO times over their median (once per site; not after a NaN/Inf was reported)."""

    RATIO = 1e4
    FLOOR = 1e-2  # a reference loss near 0 (a fit that converged) does not count as small

    def __init__(self) -> None:
        self.tracks: dict[Any, dict] = {}  # backward site -> first loss values

    def before_backward(self, m: Any, loss: Any, site: Optional[list], fn: str) -> None:
        if m.notes.get("nonfinite") or loss is None or loss.numel() != 1 or not loss.dtype.is_floating_point:
            return
        value = float(loss.detach())
        if not math.isfinite(value):
            return
        key = tuple(site[:2]) if site else None
        track = self.tracks.setdefault(key, {"first": [], "reported": False})
        if len(track["first"]) < 3:
            track["first"].append(abs(value))
            return
        reference = max(sorted(track["first"])[1], self.FLOOR)  # the median of the first three
        if not track["reported"] and abs(value) >= self.RATIO * reference:
            track["reported"] = True
            m.record("diverged", site, first=track["first"], value=value, always=True)


class LossDiverged(RuntimeCheck):
    """Runtime-only check: reported by `torchlint run` and `check_training_step`.

    ## What it does
    Follows the scalar loss given to each `backward()` call site and reports, once per site, the
    first loss that is finite but at least 10⁴ times the median magnitude of that site's first three
    losses (floored at 0.01, so a loss that converged near zero and wobbles is not reported): the
    value, the step and the first values. NaN and Inf are {rule:non-finite-value}'s.

    ## Why is this bad?
    A diverging run need not produce NaN: with a learning rate far too high, a missing
    normalization or a sign error, the loss can climb from 2.3 to 6.6e15 and stay finite, so every
    NaN check passes and the run burns its budget training nothing. The weights have already
    left any useful region long before anyone reads the log.

    ## Example
    ```python
    opt = torch.optim.SGD(model.parameters(), lr=10.0)  # far too high for this model
    for x, y in loader:
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
    ```

    ## Use instead
    ```python
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [torch.nn.utils.clip_grad_norm_](https://pytorch.org/docs/stable/generated/torch.nn.utils.clip_grad_norm_.html)
    - [torch.optim: adjusting the learning rate](https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate)
    """

    code = "TL421"
    name = "loss-diverged"
    summary = "The loss grew by orders of magnitude over its first values while staying finite"
    peer_checks = {"TA102": "partly: TL421 watches the loss growing by orders of magnitude; a threshold on the gradient norm alone is noise (it depends on the model and the loss scale)"}  # rules_docs/peer-parity.md
    seen = "a finite loss 10⁴ times its first values: the training diverged"
    monitor = DivergenceMonitor

    @classmethod
    def problems(cls, obs: run.Observation, static: list[Finding], cwd: Path) -> list[run.RuntimeProblem]:
        """The run's findings of this check."""
        out = []
        for e in obs.by_kind["diverged"]:
            first = ", ".join(f"{v:.4g}" for v in e["first"])
            out.append(run.RuntimeProblem(cls.code, e["site"],
                                          f"the loss reached {e['value']:.4g} at step {e['step']}, still finite but "
                                          f"{abs(e['value']) / max(sorted(e['first'])[1], 1e-2):.2g} times its first values "
                                          f"({first}): the training diverged (learning rate, missing normalization, a "
                                          "sign error in the loss)"))
        return out
