"""rules_docs/peer-parity.md: a row for every check of the four peers (the lists read from their
released packages), links that resolve, and torchlint codes that exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from torchlint import catalog
from torchlint.diagnostics import TOOL_CODES

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "rules_docs" / "peer-parity.md"

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
    for code, pending in re.findall(r"\b(TL\d{3})\b( †)?", text):
        assert code in known or pending, f"{code} is neither a torchlint code nor marked † (landing with issue #20)"


def test_the_readme_links_the_table():
    assert "(rules_docs/peer-parity.md)" in (ROOT / "README.md").read_text(encoding="utf-8")
