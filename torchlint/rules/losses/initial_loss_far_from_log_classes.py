"""TL420: a runtime check of `torchlint run`, with its monitor (what the program records) and judge."""

from __future__ import annotations

import math

from torchlint.diagnostics import Finding
import torchlint.runtime.judging as run
from torchlint.runtime.checks import RuntimeCheck

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any
    from pathlib import Path


class FirstLossMonitor:
    """The value of each cross_entropy site's first mean loss before any optimizer step."""

    def __init__(self) -> None:
        self.sites: set = set()

    def after_loss(self, m: Any, name: str, event: dict, result: Any) -> None:
        site = event["site"]
        key = (name, tuple(site[:2]) if site else None)
        if (name == "cross_entropy" and m.steps == 0 and key not in self.sites and event.get("class_index")
                and event["reduction"] == "mean" and result.numel() == 1):
            self.sites.add(key)
            event["first_value"] = float(result.detach())


class InitialLossFarFromLogClasses(RuntimeCheck):
    """Runtime-only check: reported by `torchlint run` and `check_training_step`, at the loss call.

    ## What it does
    Takes the first `cross_entropy` value of each call site, before any optimizer step, with class
    -index targets, `reduction='mean'`, no class weights and no label smoothing, and compares it
    with `log(C)`, the loss of uniform predictions over C classes. It reports a first loss above
    `log(C) + max(1, log(C)/2)`, e.g. above 3.45 for 10 classes.

    ## Why is this bad?
    A freshly initialized classifier should be close to uniform, so its first loss should be close
    to `log(C)`. A much larger loss means the initial logits are large and confidently wrong: a
    too-large init scale, an unnormalized input (pixels in 0..255), a missing normalization layer,
    or a final bias set for another problem. The first steps are then spent shrinking the logits,
    and training can diverge. A first loss *below* `log(C)` is not reported: a pretrained model
    starts there legitimately.

    ## Example
    ```python
    model = Net()
    x = torch.from_numpy(images).float()   # 0..255, not normalized
    loss = F.cross_entropy(model(x), y)    # 48.3 for 10 classes
    ```

    ## Use instead
    ```python
    x = torch.from_numpy(images).float() / 255.0
    x = (x - mean) / std
    loss = F.cross_entropy(model(x), y)    # about log(10) = 2.30
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [A Recipe for Training Neural Networks: "verify loss @ init"](https://karpathy.github.io/2019/04/25/recipe/)
    - [torch.nn.CrossEntropyLoss](https://pytorch.org/docs/stable/generated/torch.nn.CrossEntropyLoss.html)
    """

    code = "TL420"
    name = "initial-loss-far-from-log-classes"
    summary = "The first classification loss is far above log(C), the loss of uniform predictions"
    seen = "first classification loss far above log(C)"
    monitor = FirstLossMonitor
    severity = "warning"

    @classmethod
    def problems(cls, obs: run.Observation, static: list[Finding], cwd: Path) -> list[run.RuntimeProblem]:
        """The run's findings of this check."""
        out = []
        for e in obs.by_kind["loss"]:
            value, classes = e.get("first_value"), e.get("classes")
            if value is None or not classes or classes < 2 or e.get("weighted") or e.get("label_smoothing"):
                continue
            expected = math.log(classes)
            if math.isfinite(value) and value > expected + max(1.0, 0.5 * expected):
                out.append(run.RuntimeProblem(cls.code, e["site"],
                                              f"the first {e['fn']} loss, before any optimizer step, was {value:.4g} with "
                                              f"{classes} classes; uniform predictions give log({classes}) = {expected:.4g}, "
                                              "so the initial logits are far from uniform"))
        return out
