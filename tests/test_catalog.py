"""The catalog finds every rule and runtime check in its family package, and is the one
table of codes: nothing else lists them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from torchlint import catalog
from torchlint.rules.base import Evidence, Rule
from torchlint.runtime.checks import RuntimeCheck

PACKAGE = Path(catalog.__file__).resolve().parent


def test_every_module_of_a_family_declares_exactly_one_entry_and_all_are_found():
    found = {e.__module__ for e in catalog.entries()}
    modules = {"torchlint.rules." + ".".join(p.relative_to(PACKAGE / "rules").with_suffix("").parts)
               for p in (PACKAGE / "rules").glob("*/*.py") if p.name != "__init__.py"}
    assert found == modules
    assert len(found) == len(catalog.entries())


def test_the_family_directory_matches_the_code():
    for entry in catalog.entries():
        family = entry.__module__.split(".")[2]
        assert catalog.FAMILIES.index(family) == int(entry.code[2]), entry.code


def test_static_rules_and_runtime_checks_share_one_lookup():
    entries = catalog.entries()
    assert [e.code for e in entries] == sorted(e.code for e in entries)
    assert catalog.static_rules() and catalog.runtime_checks()
    for entry in entries:
        assert catalog.by_code()[entry.code] is entry and catalog.by_name()[entry.name] is entry
        assert catalog.lookup(entry.code.lower()) is entry and catalog.lookup(entry.name) is entry
        static = issubclass(entry, Rule)
        assert static != issubclass(entry, RuntimeCheck) and catalog.is_static(entry) == static
        assert (catalog.static_rule(entry.code) is entry) == static
        assert (catalog.static_rule(entry.name) is entry) == static
    assert catalog.lookup("TL999") is None and catalog.static_rule("no-such-rule") is None
    assert catalog.static_codes().isdisjoint(catalog.runtime_codes())
    assert catalog.static_codes() | catalog.runtime_codes() == set(catalog.by_code())


def test_a_misfiled_or_duplicate_entry_is_refused(monkeypatch):
    class Stray(Rule):
        code, name, summary = catalog.static_rules()[-1].code, "stray", "a duplicate code"

    with pytest.raises(AssertionError, match="duplicate"):
        catalog._check([*catalog.entries(), Stray])

    class BadSeverity(Rule):
        code, name, summary, severity = "TL998", "bad-severity", "x", "fatal"

    with pytest.raises(AssertionError, match="severity"):
        catalog._check([BadSeverity])


def test_no_module_outside_the_catalog_keeps_a_table_of_codes():
    """The old hand-kept registries are gone, and rules do not fill a code set on import."""
    assert not (PACKAGE / "rules" / "registry.py").exists()
    assert not (PACKAGE / "rules" / "codes.py").exists()
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"\b(ALL_RULES|RULES_BY_CODE|KNOWN_CODES)\b", text), path


def test_every_rule_declares_its_evidence_and_the_named_functions_exist():
    from torchlint.runtime import analysis
    from torchlint.verify.instrument import SLICES

    for rule in catalog.static_rules():
        assert isinstance(vars(rule).get("evidence"), Evidence), rule.code
    monitors = analysis.static_monitors()
    assert set(monitors) == {r.code for r in catalog.static_rules() if r.evidence.runtime}
    assert all(callable(m) for m in monitors.values())
    named_slices = {r.evidence.slice for r in catalog.static_rules() if r.evidence.slice}
    assert named_slices == set(SLICES)  # every shape is used, and every name exists
    from torchlint.verify import evidence_index as index  # the worker's copy (it imports no torch at the top)

    for rule in catalog.static_rules():
        for kind, fn in (("PROBES", rule.evidence.probe), ("JUDGES", rule.evidence.judge)):
            if fn is None:
                assert rule.code not in getattr(index, kind), (rule.code, kind)
                continue
            assert fn.__module__ == rule.__module__, rule.code  # beside the rule, nowhere else
            assert getattr(index, kind)[rule.code].__name__ == fn.__name__, (rule.code, kind)


def _probe(params: dict, device: str) -> tuple[str, str]:
    return "skipped", "a test"


def test_evidence_is_a_probe_or_a_reason():
    assert Evidence(probe=_probe).reason is None and Evidence(reason="why").probe is None
    for bad in ({}, {"probe": _probe, "reason": "why"}, {"probe": _probe, "judge": _probe}, {"probe": _probe, "slice": "s"}):
        with pytest.raises(ValueError):
            Evidence(**bad)
    with pytest.raises(TypeError):  # a name in another module's table is no longer evidence
        Evidence(probe="backward_under_no_grad")
