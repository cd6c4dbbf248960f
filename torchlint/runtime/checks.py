"""The base of runtime-only checks: problems only a run can see, reported by `torchlint run`
and `check_training_step`. Each check is declared in its family's module beside the static
rules (`torchlint/rules/<family>/<name>.py`) with its monitor and its judge, and found by
`torchlint.catalog`; it shares the code space, docs and `torchlint rule` with the static rules.
No torch here."""

from __future__ import annotations


TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import ClassVar, Optional
    from pathlib import Path
    from torchlint.diagnostics import Finding
    from torchlint.runtime.judging import Observation, RuntimeProblem


class RuntimeCheck:
    """A runtime check: its metadata, the monitor that records what it needs in the program
    (optional: a check may read events other monitors write) and its judge, `problems`. Its
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
    # A class of the module whose hooks run inside the program (runtime/monitor.py's
    # `HOOKS`); scripts/generate_all.py copies it into runtime/monitors_<family>.py.
    monitor: ClassVar[Optional[type]] = None
    # One finding per (check, line): a line that runs every step reports once.
    one_per_site: ClassVar[bool] = True
    # The peer linters' checks it covers, as `Rule.peer_checks`.
    peer_checks: ClassVar[dict[str, str]] = {}

    @classmethod
    def problems(cls, obs: "Observation", static: "list[Finding]", cwd: Path) -> "list[RuntimeProblem]":
        """The check's findings in this run. `static` holds the static findings with their
        runtime verdicts (a check may leave a hazard to the static finding that names it)."""
        return []
