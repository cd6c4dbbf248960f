"""Runtime monitoring: `torchlint run`, `check_training_step` and the pytest fixture.

Importing this package never imports torch; the monitors import it when they run. The API is
loaded on first use, so `check` (which reads the runtime-check table for SARIF and `rule`)
pays nothing for it."""

from __future__ import annotations


from torchlint.runtime.checks import RuntimeCheck

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_API = ("TrainingStepFailed", "check_training_step", "monitor_findings", "monitored")

__all__ = ["RUNTIME_CHECKS", "RUNTIME_CHECKS_BY_CODE", "RuntimeCheck", *_API]


def __getattr__(name: str) -> Any:
    if name in ("RUNTIME_CHECKS", "RUNTIME_CHECKS_BY_CODE"):  # the catalog's, kept for callers of this API
        from torchlint import catalog

        checks = catalog.runtime_checks()
        return checks if name == "RUNTIME_CHECKS" else {c.code: c for c in checks}
    if name in _API:
        from torchlint.runtime import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
