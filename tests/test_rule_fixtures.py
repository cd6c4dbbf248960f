"""Every rule's fixtures: lines marked `# expect: TLxxx` are reported, nothing else is."""

from __future__ import annotations

import pytest

from conftest import FIXTURES, expected_columns, expected_findings, lint_file
from torchlint import catalog

FIXTURE_FILES = sorted(FIXTURES.glob("TL*/*.py"))


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fixture(path):
    code = path.parent.name
    expected = expected_findings(path)
    findings = lint_file(path, {code})
    actual = {(f.row, f.code) for f in findings}
    missing = sorted(expected - actual)
    unexpected = sorted(actual - expected)
    assert not missing and not unexpected, f"missed: {missing}; false positives: {unexpected}"
    wrong_column = expected_columns(path) - {(f.row, f.col, f.code) for f in findings}
    assert not wrong_column, f"no finding at (row, column, code) {sorted(wrong_column)}"


@pytest.mark.parametrize("rule", catalog.static_rules(), ids=lambda r: r.code)
def test_every_rule_has_positive_and_negative_fixtures(rule):
    files = sorted((FIXTURES / rule.code).glob("*.py"))
    assert files, f"{rule.code} has no fixtures under tests/fixtures/{rule.code}/"
    expected = set().union(*(expected_findings(p) for p in files))
    assert expected, f"{rule.code}: no `# expect:` positives"
    if rule.code == "TL000":
        return
    aliased = FIXTURES / rule.code / "aliased.py"
    assert aliased.is_file() and expected_findings(aliased), \
        f"{rule.code}: needs aliased.py with positives through aliased imports (`import torch as T`, ...)"
    text = "\n".join(p.read_text() for p in files)
    assert "must stay silent" in text, f"{rule.code}: fixtures need a near-miss section"
    total_lines = sum(len(p.read_text().splitlines()) for p in files)
    assert total_lines > len(expected) * 2, f"{rule.code}: fixtures look like positives only"


def test_fixture_expectations_cover_only_the_rule_under_test():
    for path in FIXTURE_FILES:
        for _, code in expected_findings(path):
            assert code == path.parent.name, f"{path}: expects {code} in {path.parent.name}'s fixtures"
