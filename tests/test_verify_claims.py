"""verify/claims.py: a probe that reads none of the finding's facts never says `demonstrated`
or `not-reproduced` about the user's code (issue 19, point 3)."""

from __future__ import annotations

import ast
import inspect
import textwrap

import pytest

from torchlint import catalog
from torchlint.records import PROBE, YOUR_CODE, Verdict
from torchlint.verify.claims import GENERIC_LABEL, OFF_BY_DEFAULT_LABEL, as_claimed, generic_probe_codes

PROBED = [r for r in catalog.static_rules() if r.evidence is not None and r.evidence.probe is not None]


def _reads_its_facts(probe) -> bool:
    fn = ast.parse(textwrap.dedent(inspect.getsource(probe))).body[0]
    assert isinstance(fn, ast.FunctionDef)
    facts = fn.args.args[0].arg
    return any(isinstance(n, ast.Name) and n.id == facts for n in ast.walk(fn) if n is not fn)


@pytest.mark.parametrize("rule", PROBED, ids=lambda r: r.code)
def test_generic_probe_is_declared_exactly_when_the_probe_reads_no_fact(rule):
    assert rule.evidence.generic_probe is not _reads_its_facts(rule.evidence.probe)


def test_the_generic_rules_are_the_ones_whose_probes_ignore_the_code():
    assert {"TL203", "TL403", "TL701", "TL704"} <= generic_probe_codes()
    assert not {"TL205", "TL601", "TL111"} & generic_probe_codes()


@pytest.mark.parametrize("verdict", ["demonstrated", "not-reproduced", "not-applicable"])
def test_a_generic_probe_answer_is_skipped_and_its_demonstration_kept(verdict):
    got = as_claimed("TL203", Verdict(verdict, "probe (the flagged code was not run: x): 2 copies", PROBE))
    assert got.verdict == "skipped" and got.source == PROBE
    assert got.evidence.startswith(GENERIC_LABEL) and f"({verdict})" in got.evidence and "2 copies" in got.evidence


def test_an_off_by_default_rules_probe_demonstration_is_skipped_but_its_no_stands():
    shown = as_claimed("TL707", Verdict("demonstrated", "probe: Adam's L2 decay shrank the update", PROBE))
    assert shown.verdict == "skipped" and shown.evidence.startswith(OFF_BY_DEFAULT_LABEL)
    assert "Adam's L2 decay" in shown.evidence
    no = Verdict("not-reproduced", "probe: values, not sizes", PROBE)
    assert as_claimed("TL205", no) is no


@pytest.mark.parametrize("code, verdict", [("TL203", Verdict("confirmed", "ran it", YOUR_CODE)),
                                           ("TL110", Verdict("demonstrated", "probe: G got gradients", PROBE)),
                                           ("TL203", Verdict("error", "probe failed", PROBE))])
def test_your_code_a_fact_reading_probe_and_errors_are_left_as_they_are(code, verdict):
    assert as_claimed(code, verdict) is verdict
