"""Runtime monitoring: `torchlint run`, `check_training_step` and the pytest fixture.

Importing this package never imports torch; the monitors import it when they run."""

from __future__ import annotations

from torchlint.runtime.api import TrainingStepFailed, check_training_step, monitor_findings
from torchlint.runtime.checks import RUNTIME_CHECKS, RUNTIME_CHECKS_BY_CODE, RuntimeCheck

__all__ = ["RUNTIME_CHECKS", "RUNTIME_CHECKS_BY_CODE", "RuntimeCheck", "TrainingStepFailed", "check_training_step",
           "monitor_findings"]
