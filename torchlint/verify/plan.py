"""Which probe each finding gets: a self-contained snippet, a rule probe with values from
the flagged code, or a `skipped` verdict with the reason."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from torchlint.diagnostics import Finding
from torchlint.rules.registry import RULES_BY_CODE

# Rules with a probe in probes.py (kept in sync by tests/test_verify.py).
PROBED = frozenset({
    "TL101", "TL102", "TL103", "TL104", "TL105", "TL106", "TL107", "TL108", "TL109",
    "TL201", "TL202", "TL203", "TL204", "TL205", "TL206",
    "TL301", "TL302", "TL303", "TL304",
    "TL401", "TL402", "TL403",
    "TL501", "TL502",
    "TL601", "TL602",
    "TL701", "TL702", "TL703", "TL704",
    "TL801", "TL804",
})


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
        rule = RULES_BY_CODE.get(code)
        note = rule.verify_note if rule is not None and rule.verify_note else \
            "no run-time probe: the hazard is about performance or style, not a wrong result"
        return None, note
    params = dict(finding.probe_params)
    snippet = params.pop("snippet", None)
    frozen = tuple(sorted((k, v) for k, v in params.items() if isinstance(v, (str, int, float, bool))))
    return ProbeRequest(code, frozen, snippet), None
