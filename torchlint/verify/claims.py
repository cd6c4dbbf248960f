"""What a verdict may claim about the user's code (issue 19, point 3). A probe does not see
the code: it runs an example of its own, at best built from the facts the rule read.

- A probe that reads none of the finding's facts (`Evidence.generic_probe`) shows what torch
  does in general: on a false finding its `demonstrated` would be wrong, and on a true one its
  `not-reproduced` would be. Its answer is reported as `skipped`.
- A rule that is off by default is off because, on held-out code, many of its findings were
  not at risk; the facts it reads do not tell those apart, so neither can its probe: a probe's
  `demonstrated` for it is reported as `skipped`. A `not-reproduced` stays: the code's own
  facts (values, not sizes; a 1-D input) made the hazard impossible.

What the probe showed is kept in the evidence, labelled. Applied to every verdict on its way
out, cached ones included, so a cache written before these rules cannot say more."""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

from torchlint import catalog
from torchlint.records import PROBE, Verdict

GENERIC_LABEL = "not shown on your code: this rule's probe reads none of the code's facts, so it shows torch in general"
OFF_BY_DEFAULT_LABEL = ("not shown on your code: the probe showed the hazard for the finding's facts, but this rule is "
                        "off by default because on real code many of its findings are not at risk, which a probe "
                        "cannot tell apart")


@lru_cache(maxsize=None)
def _rules() -> tuple[frozenset[str], frozenset[str]]:
    rules = [rule for rule in catalog.static_rules() if rule.evidence is not None]
    return (frozenset(r.code for r in rules if r.evidence.generic_probe),
            frozenset(r.code for r in rules if not r.default_enabled))


def generic_probe_codes() -> frozenset[str]:
    return _rules()[0]


def as_claimed(code: str, verdict: Verdict) -> Verdict:
    """The verdict as --verify may report it for a finding of rule `code`."""
    if verdict.source != PROBE or verdict.verdict in ("skipped", "error"):
        return verdict
    generic, off_by_default = _rules()
    if code in generic:
        label = GENERIC_LABEL
    elif code in off_by_default and verdict.verdict in ("demonstrated", "confirmed"):
        label = OFF_BY_DEFAULT_LABEL
    else:
        return verdict
    shown = verdict.evidence.removeprefix("probe")
    return replace(verdict, verdict="skipped", evidence=f"{label} ({verdict.verdict}){shown}")
