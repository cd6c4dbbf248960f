"""The per-step series that `torchlint run --report` plots: the loss of each backward site, the
gradient norm and learning rate of each parameter group, one `series` event per optimizer step.

Loaded by path beside monitor.py inside the user's processes (see monitor._sibling), so only the
standard library at import time; torch is imported when a hook runs. It is one more plugin of
the Monitor with the `before_backward` and `step` hooks (monitor.HOOKS). Reading a loss or a
norm is a device sync, so steps are sampled: every one of the first KEEP, then every 2nd up to
2*KEEP, every 4th up to 4*KEEP, ...: about KEEP points per doubling of a long run.
"""

from __future__ import annotations

import math
import os
import weakref

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional

KEEP = 512


def sampled(step: int) -> bool:
    """Is optimizer step `step` (1-based) recorded?"""
    stride = 1 << max(0, (step // KEEP).bit_length() - 1)
    return step % stride == 0


def site_label(site: Optional[list]) -> str:
    return f"{site[0]}:{site[1]}" if site else "?"


class SeriesRecorder:
    """Losses seen since the last optimizer step (mean per backward site), written with the
    step's gradient norms and learning rates."""

    def __init__(self) -> None:
        self.losses: dict[str, list[float]] = {}  # backward site -> [sum, count]
        self.labels: Any = weakref.WeakKeyDictionary()  # optimizer -> its groups' labels

    def before_backward(self, m: Any, loss: Any, site: Optional[list], fn: str) -> None:
        if fn == "grad" or loss is None or loss.numel() != 1 or not loss.dtype.is_floating_point:
            return
        if not sampled(m.steps + 1):
            return
        value = float(loss.detach())
        total = self.losses.setdefault(site_label(site), [0.0, 0])
        total[0] += value
        total[1] += 1

    def step(self, m: Any, optimizer: Any, site: Optional[list], event: dict) -> None:
        losses, self.losses = self.losses, {}
        if not sampled(m.steps + 1):
            return
        groups = optimizer.param_groups
        m.sink.write({"kind": "series", "pid": os.getpid(), "rank": m.rank(), "step": m.steps + 1, "site": site,
                      "optimizer": type(optimizer).__name__, "loss": {k: s / n for k, (s, n) in losses.items()},
                      "lr": [self.number(g.get("lr")) for g in groups], "grad_norm": self.norms(m, optimizer),
                      "groups": self.group_labels(m, optimizer)})

    @staticmethod
    def number(value: Any) -> Optional[float]:
        try:
            return float(value)  # a float, or a tensor lr (capturable optimizers)
        except (TypeError, ValueError, RuntimeError):
            return None

    @staticmethod
    def norms(m: Any, optimizer: Any) -> list:
        """The L2 norm of each group's gradients (None: no gradient), from the step's shared
        per-parameter norms."""
        groups = m.gradient_norms(optimizer)
        if groups is None:
            return []
        return [math.sqrt(sum(v * v for _, v in group)) if group else None for group in groups]

    def group_labels(self, m: Any, optimizer: Any) -> list[str]:
        labels = self.labels.get(optimizer)
        if labels is None or len(labels) != len(optimizer.param_groups):
            names = m.parameter_names()
            labels = []
            for index, group in enumerate(optimizer.param_groups):
                named = [names[id(p)] for p in group["params"] if id(p) in names]
                first = f": {named[0]}" + (f" and {len(group['params']) - 1} more" if len(group["params"]) > 1 else "")
                labels.append(f"group {index}" + (first if named else f" ({len(group['params'])} tensors)"))
            self.labels[optimizer] = labels
        return labels
