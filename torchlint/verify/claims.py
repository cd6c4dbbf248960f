"""What a verdict may claim about the user's code (issue 19, point 3). A probe that builds
its own example and reads none of the finding's facts (`Evidence.generic_probe`) shows what
torch does in general: on a false finding its `demonstrated` would be wrong, and on a true
one its `not-reproduced` would be. Such an answer is reported as `skipped`, and what the
probe showed is kept, labelled as a generic demonstration. Applied to every verdict on its
way out, cached ones included, so a cache written before this rule cannot say more."""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

from torchlint import catalog
from torchlint.records import PROBE, Verdict

GENERIC_LABEL = "not shown on your code: this rule's probe reads none of the code's facts, so it shows torch in general"


@lru_cache(maxsize=None)
def generic_probe_codes() -> frozenset[str]:
    return frozenset(rule.code for rule in catalog.static_rules()
                     if rule.evidence is not None and rule.evidence.generic_probe)


def as_claimed(code: str, verdict: Verdict) -> Verdict:
    """The verdict as --verify may report it for a finding of rule `code`."""
    if verdict.source != PROBE or verdict.verdict in ("skipped", "error") or code not in generic_probe_codes():
        return verdict
    shown = verdict.evidence.removeprefix("probe")
    return replace(verdict, verdict="skipped", evidence=f"{GENERIC_LABEL} ({verdict.verdict}){shown}")
