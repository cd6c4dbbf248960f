"""Which probe each finding gets: a self-contained snippet, a rule probe with values from
the flagged code, or a `skipped` verdict with the reason."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from torchlint.diagnostics import Finding
from torchlint.rules.registry import ALL_RULES, RULES_BY_CODE

# A rule without a `verify_note` has a probe in probes.py (tests/test_verify.py checks the
# two agree); the note says why the others cannot be shown on a machine.
PROBED = frozenset(r.code for r in ALL_RULES if r.verify_note is None)


@dataclass(frozen=True)
class ProbeRequest:
    code: str
    params: tuple[tuple[str, Any], ...]
    snippet: Optional[str]

    def as_json(self) -> dict[str, Any]:
        return {"code": self.code, "params": dict(self.params), "snippet": self.snippet}


def plan(finding: Finding) -> tuple[Optional[ProbeRequest], Optional[str]]:
    """(request, None) for a probe, or (None, reason) for `skipped`."""
    code = finding.code
    if code not in PROBED:
        return None, RULES_BY_CODE[code].verify_note
    params = dict(finding.probe_params)
    snippet = params.pop("snippet", None)
    frozen = tuple(sorted((k, v) for k, v in params.items() if isinstance(v, (str, int, float, bool))))
    return ProbeRequest(code, frozen, snippet), None
