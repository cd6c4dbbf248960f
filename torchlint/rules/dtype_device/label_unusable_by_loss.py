"""TL221: a runtime check of `torchlint run`, with its monitor (what the program records) and judge."""

from __future__ import annotations

import os

from torchlint.diagnostics import Finding
import torchlint.runtime.judging as run
from torchlint.runtime.checks import RuntimeCheck

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any
    from pathlib import Path


class TargetMonitor:
    """What a loss's targets held: how many elements it counts (`counted`, which
    mean-reduction-under-ddp's judge compares across ranks), the range of class-index labels
    (`label_range`), of probability targets (`prob_range`, with the first `row_sums`, which
    label-float-cast's judge reads). Reading values costs a device sync, so only within the
    per-site label budget."""

    def loss(self, m: Any, name: str, inp: Any, target: Any, event: dict, budget: bool) -> None:
        if name not in ("cross_entropy", "nll_loss"):
            event["counted"] = inp.numel()
            if name.startswith("binary_cross_entropy") and target.numel():
                event["prob_range"] = self.value_range(target)
            return
        classes = event["classes"]
        if event["class_index"] and not target.dtype.is_floating_point and target.numel():
            # One sync for the range; the mask of ignored labels only where the range holds one.
            low, high = self.value_range(target)
            ignore = event["ignore_index"]
            if not low <= ignore <= high:
                event["counted"] = target.numel()
                if budget:
                    event["labels_read"] = True
                    event["label_range"] = [low, high]
                return
            counted = target != ignore
            event["counted"] = int(counted.sum())
            if budget:
                event["labels_read"] = True
                kept = target[counted]
                if kept.numel():
                    event["label_range"] = self.value_range(kept)
        elif not event["class_index"] and target.dtype.is_floating_point and target.numel():
            event["counted"] = target.numel() // max(1, classes)
            if budget:
                event["labels_read"] = True
                row_sums = target.detach().reshape(-1, classes).sum(dim=-1) if target.dim() == 2 else None
                event["prob_range"] = self.value_range(target)
                if row_sums is not None:
                    event["row_sums"] = m.rounded(row_sums[:4].tolist())

    @staticmethod
    def value_range(tensor: Any) -> list:
        """[min, max] of a non-empty tensor, read in one sync."""
        import torch

        return torch.stack(torch.aminmax(tensor.detach())).tolist()


class LabelUnusableByLoss(RuntimeCheck):
    """Runtime-only check: reported by `torchlint run` and `check_training_step`, at the loss call.

    ## What it does
    At each `cross_entropy` / `nll_loss` call (functional or `nn.CrossEntropyLoss` /
    `nn.NLLLoss`), checks the labels the loss actually receives: class indices must lie in
    `0..C-1` (or equal `ignore_index`), where C is the input's class dimension; a target with the
    class-index shape must have an integer dtype the loss accepts; a floating-point target shaped
    like the input is read as class probabilities and must lie in [0, 1]. For
    `binary_cross_entropy(_with_logits)` the targets must lie in [0, 1]. Reports the observed
    dtype, shape and value range, and the error torch raised, if any.

    ## Why is this bad?
    On the CPU an out-of-range label raises `IndexError: Target 5 is out of bounds`; on CUDA it is
    a device-side assert that kills the process with a message that names no line. Labels numbered
    from 1 instead of 0, a class count off by one, or a padding value that is not `ignore_index`
    are the usual causes. BCE targets outside [0, 1] raise no error at all: the loss is simply
    wrong, and can go negative.

    A float cast of the labels where the code shows it is reported by {rule:label-float-cast} instead.

    ## Example
    ```python
    labels = torch.tensor(df["class"].values)   # classes numbered 1..10
    loss = F.cross_entropy(logits, labels)       # logits have 10 columns
    ```

    ## Use instead
    ```python
    labels = torch.tensor(df["class"].values) - 1   # 0..9
    loss = F.cross_entropy(logits, labels)
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [torch.nn.CrossEntropyLoss](https://pytorch.org/docs/stable/generated/torch.nn.CrossEntropyLoss.html)
    - [torch.nn.BCEWithLogitsLoss](https://pytorch.org/docs/stable/generated/torch.nn.BCEWithLogitsLoss.html)
    """

    code = "TL221"
    name = "label-unusable-by-loss"
    summary = "Labels with a dtype or a value range the loss cannot use"
    seen = "labels out of `0..C-1`, of a dtype the loss rejects, or BCE targets outside [0, 1]"
    monitor = TargetMonitor

    @classmethod
    def problems(cls, obs: run.Observation, static: list[Finding], cwd: Path) -> list[run.RuntimeProblem]:
        """The run's findings of this check."""
        confirmed_casts = {(os.path.realpath(cwd / f.path), f.row) for f in static
                           if f.code == "TL201" and f.runtime and f.runtime.confirmed}
        # A loss whose labels a confirmed TL201 cast made float: that finding already explains it.
        explained = {(e["site"][0], e["site"][1]) for e in obs.by_kind["loss"]
                     if e.get("site") and any(p == e["site"][0] and e["site"][3] <= row <= e["site"][1]
                                              for p, row in confirmed_casts)}
        out = []
        for e in obs.by_kind["loss"]:
            site_key = tuple(e["site"][:2]) if e.get("site") else None
            target = e.get("target")
            if not target:
                continue
            if e["fn"] in run.CLASS_INDEX_LOSSES:
                classes = e.get("classes")
                low_high = e.get("label_range")
                if e.get("class_index") and low_high and isinstance(classes, int) \
                        and (low_high[0] < 0 or low_high[1] >= classes):
                    error = f": {e['error']}" if e.get("error") else ""
                    out.append(run.RuntimeProblem(cls.code, e["site"],
                                                  f"labels reaching {e['fn']} range over [{low_high[0]}, {low_high[1]}] but "
                                                  f"the input has {classes} classes (valid: 0..{classes - 1} or "
                                                  f"ignore_index={e['ignore_index']}){error}"))
                elif e.get("error") and e.get("class_index") and site_key not in explained:
                    out.append(run.RuntimeProblem(cls.code, e["site"],
                                                  f"{e['fn']} cannot use {target['dtype']} labels of shape {run.shape(target)} "
                                                  f"for input {run.shape(e['input'])}: {e['error']}"))
                elif not e.get("class_index") and _bad_probabilities(e):
                    low, high = e["prob_range"]
                    out.append(run.RuntimeProblem(cls.code, e["site"],
                                                  f"{e['fn']} got a {target['dtype']} target shaped like the input, read as "
                                                  f"class probabilities, but its values range over [{low:g}, {high:g}]"))
            elif e["fn"].startswith("binary_cross_entropy") and _bad_probabilities(e):
                low, high = e["prob_range"]
                out.append(run.RuntimeProblem(cls.code, e["site"], f"{e['fn']} targets range over [{low:g}, {high:g}]; "
                                                                  "they must be probabilities in [0, 1]"))
        return out


def _bad_probabilities(e: dict[str, Any]) -> bool:
    low_high = e.get("prob_range")
    return low_high is not None and (low_high[0] < 0 or low_high[1] > 1)
