"""rules_docs/peer-parity.md, generated from scripts/peer_checks.toml (the peers' checks, and why
no rule covers some) and the rules' `peer_checks`: a row for every check of the four peers (the
lists read from their released packages), links that resolve, and a data file that spells no
torchlint code."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from torchlint import catalog
from torchlint.diagnostics import TOOL_CODES

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "rules_docs" / "peer-parity.md"
SCRIPT = ROOT / "scripts" / "generate_peer_parity.py"

# The checks each peer's wheel defines (TorchFix 0.7.0, torch-audit 0.3.0, torch-preflight
# 0.5.0, dslinter 2.0.9's PyTorch checks).
PEER_CHECKS = {
    "TorchFix 0.7.0": "TOR001 TOR002 TOR003 TOR004 TOR101 TOR102 TOR103 TOR104 TOR105 TOR106 TOR107 "
                      "TOR201 TOR202 TOR203 TOR401 TOR901",
    "torch-audit 0.3.0": "TA000 TA100 TA102 TA103 TA104 TA105 TA200 TA201 TA202 TA203 TA300 TA301 TA302 "
                         "TA303 TA304 TA305 TA400 TA401 TA402 TA403 TA404 TA405 TA500 TA501",
    "torch-preflight 0.5.0": "TG001 TG002 TG003 TG004 TG005 TG006 TG007 TG008 TG010 TG011 TG012 TG013 TG014",
    "dslinter 2.0.9": "W5516 W5517 W9998 W5512 W5514 W5507 W5511 R5508 W5521 C5506",
}


def _generator():
    spec = importlib.util.spec_from_file_location("generate_peer_parity", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("| check")]


@pytest.mark.parametrize("peer", sorted(PEER_CHECKS))
def test_every_check_of_the_peer_has_a_row(peer):
    text = PAGE.read_text(encoding="utf-8")
    section = text.split(f"## {peer}\n", 1)[1].split("\n## ", 1)[0]
    first_cells = {row.split("|")[1].strip().split()[0] for row in _rows(section)}
    missing = [c for c in PEER_CHECKS[peer].split() if c not in first_cells]
    assert not missing, f"{peer}: no row for {missing}"


def test_links_resolve_and_codes_exist():
    text = PAGE.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)]+\.md)\)", text):
        assert (PAGE.parent / target).is_file(), target
    known = {r.code for r in (*catalog.static_rules(), *catalog.runtime_checks(), *TOOL_CODES)}
    unknown = sorted(set(re.findall(r"\b(TL\d{3})\b", text)) - known)
    assert not unknown, f"{unknown}: no such torchlint code"


def test_the_data_file_names_rules_only_by_name():
    gen = _generator()
    text = gen.DATA.read_text(encoding="utf-8")
    assert not re.findall(r"\bTL\d{3}\b", text), "write {rule:<name>}: the page links it"
    assert re.search(r"\{rule:[a-z-]+\}", text)  # and it does refer to some


def test_a_rule_reference_becomes_a_link_and_an_unknown_name_stops_the_generator():
    gen = _generator()
    rule = catalog.static_rules()[1]
    assert gen.render_refs(f"as {{rule:{rule.name}}} does") == f"as [{rule.code}]({rule.code}-{rule.name}.md) does"
    with pytest.raises(SystemExit, match="no-such-rule"):
        gen.render_refs("{rule:no-such-rule}")


def test_the_statuses_of_several_covering_rules_are_joined_with_their_codes():
    gen = _generator()
    first, second = catalog.static_rules()[1:3]
    same = [(first, "partly: a"), (second, "partly: b")]
    assert gen._status({"check": "X1"}, same) == f"partly: a ({first.code}), b ({second.code})"
    mixed = [(first, "covered"), (second, "partly: b")]
    assert gen._status({"check": "X1", "note": "c"}, mixed) == f"covered ({first.code}); partly: b ({second.code}); c"


def test_every_check_is_covered_or_has_a_reason_and_rules_name_only_known_checks(monkeypatch):
    gen = _generator()
    data = gen.load()
    covered = gen.coverage()
    for peer in data["peer"]:
        for check in peer["checks"]:  # the page is generated; the generator refuses both and neither
            assert (check["check"] in covered) != ("status" in check), check["check"]
    rule = catalog.static_rules()[1]
    monkeypatch.setattr(rule, "peer_checks", {"TG999": "covered"})
    with pytest.raises(SystemExit, match=f"{rule.code}: peer_checks names \\['TG999'\\]"):
        gen.page(data)
    monkeypatch.setattr(rule, "peer_checks", {"TA105": "covered"})  # a check the data file gives a reason for
    with pytest.raises(SystemExit, match=f"TA105 has a status, but {rule.code} covers it"):
        gen.page(data)
    monkeypatch.setattr(rule, "peer_checks", {})
    lost, [(only, _)] = next((c, v) for c, v in covered.items() if len(v) == 1)  # a check one rule covers
    monkeypatch.setattr(only, "peer_checks", {c: s for c, s in only.peer_checks.items() if c != lost})
    with pytest.raises(SystemExit, match=f"no rule covers {lost}, and it has no status"):
        gen.page(data)


def test_a_status_says_covered_or_partly(monkeypatch):
    gen = _generator()
    rule = catalog.static_rules()[1]
    monkeypatch.setattr(rule, "peer_checks", {"TG005": "maybe"})
    with pytest.raises(SystemExit, match=f"{rule.code}: peer_checks\\['TG005'\\] must start with 'covered' or 'partly'"):
        gen.coverage()


def test_the_readme_links_the_table():
    assert "(rules_docs/peer-parity.md)" in (ROOT / "README.md").read_text(encoding="utf-8")
