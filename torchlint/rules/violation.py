"""What a rule reports: one small frozen dataclass per kind of finding, declared beside the
rule class (ruff's `#[violation]`), so every message a rule can produce reads in one place.

    @dataclass(frozen=True)
    class SoftmaxBeforeLoss(Violation):
        loss: str
        activation: str

        def message(self) -> str:
            return f"`{self.loss}` gets {self.activation} outputs"

    self.report(node, SoftmaxBeforeLoss(loss="F.cross_entropy", activation="softmax"))

The fields are what the message needs, not the probe's facts (those stay `params=`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Optional


@dataclass(frozen=True)
class Violation:
    # What to do about it, one short sentence, when that does not depend on the fields;
    # a violation whose advice does overrides `help_text()` instead.
    help: ClassVar[Optional[str]] = None

    def message(self) -> str:
        """What is wrong, one short sentence (at most about 90 characters)."""
        raise NotImplementedError(f"{type(self).__name__} must define message()")

    def help_text(self) -> Optional[str]:
        return self.help
