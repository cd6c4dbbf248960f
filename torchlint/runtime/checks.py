"""The base of runtime-only checks: problems only a run can see, reported by `torchlint run`
and `check_training_step`. Each check is declared in its family's module beside the static
rules (`torchlint/rules/<family>/<name>.py`) and found by `torchlint.catalog`; it shares the
code space, docs and `torchlint rule` with the static rules. No torch here."""

from __future__ import annotations

from typing import ClassVar, Optional


class RuntimeCheck:
    """A runtime check: metadata only (the run's monitors and judges do the work); its
    docstring is its documentation, as for a `Rule`."""

    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]
    # The README's "what the run saw" column.
    seen: ClassVar[str]
    severity: ClassVar[str] = "error"
    # Shared with `Rule`, so the docs, SARIF and `torchlint rule` treat both alike.
    default_enabled: ClassVar[bool] = True
    tags: ClassVar[tuple[str, ...]] = ("correctness", "runtime")
    precision: ClassVar[str] = "very-high"
    security_severity: ClassVar[Optional[float]] = None

