"""TL422: a runtime check of `torchlint run`, with its monitor (what the program records) and judge."""

from __future__ import annotations

from pathlib import Path

from torchlint.diagnostics import Finding
import torchlint.runtime.judging as run
from torchlint.runtime.checks import RuntimeCheck


class SingleClassCrossEntropy(RuntimeCheck):
    """Runtime-only check: reported by `torchlint run` and `check_training_step`.

    ## What it does
    Reports a `cross_entropy` (function or `nn.CrossEntropyLoss`) called with grad mode on whose
    input has a single class: shape `(N, 1)` or `(N, 1, ...)`.

    ## Why is this bad?
    `cross_entropy` applies `log_softmax` over the class dimension, and the softmax of one value
    is 1: its log is 0 whatever the model outputs. The loss is always `-0.0`, every gradient
    through it is zero, and the model never trains, while the loop runs without an error. It
    happens when a binary classifier with one output unit is given the multi-class loss (an
    upstream DDP tutorial did exactly this).

    ## Example
    ```python
    model = nn.Linear(16, 1)  # one output unit
    loss = F.cross_entropy(model(x), y)  # always -0.0
    ```

    ## Use instead
    ```python
    model = nn.Linear(16, 1)
    loss = F.binary_cross_entropy_with_logits(model(x).squeeze(1), y.float())
    # or: nn.Linear(16, 2) with F.cross_entropy
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [torch.nn.CrossEntropyLoss](https://pytorch.org/docs/stable/generated/torch.nn.CrossEntropyLoss.html)
    - [torch.nn.BCEWithLogitsLoss](https://pytorch.org/docs/stable/generated/torch.nn.BCEWithLogitsLoss.html)
    """

    code = "TL422"
    name = "single-class-cross-entropy"
    summary = "cross_entropy over a single class: the loss is always 0 and the gradients are zero"
    seen = "`cross_entropy` over one class: the loss is always -0.0, the gradients zero"

    @classmethod
    def problems(cls, obs: run.Observation, static: list[Finding], cwd: Path) -> list[run.RuntimeProblem]:
        """The run's findings of this check."""
        return [run.RuntimeProblem(cls.code, e["site"],
                                   f"cross_entropy got an input {run.shape(e['input'])} with a single class: log_softmax over "
                                   "one class is 0, so the loss is always -0.0 and every gradient through it is zero; for "
                                   "a binary output use binary_cross_entropy_with_logits, for C classes C outputs")
                for e in obs.by_kind["loss"]
                if e["fn"] == "cross_entropy" and e.get("classes") == 1 and e.get("input_dim", 0) >= 2
                and e.get("grad_enabled")]
