"""Every rule has a doc with ruff's sections; `torchlint rule` prints it."""

from __future__ import annotations

import json
import re

import pytest

from torchlint.docs import SECTIONS, doc_sections, docs_dir, rule_doc
from torchlint.rules.registry import ALL_RULES


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_doc_exists_with_all_sections(rule):
    path = docs_dir() / f"{rule.code}-{rule.name}.md"
    assert path.is_file(), f"missing {path.name}"
    text = rule_doc(rule.code)
    assert text.startswith(f"# {rule.code} {rule.name}\n")
    default = "on" if rule.default_enabled else "off"
    assert f"**Default:** {default} · **Severity:** {rule.severity}" in text
    sections = doc_sections(text)
    assert list(sections) == list(SECTIONS), f"{path.name}: sections {list(sections)}"
    assert all(sections[s] for s in SECTIONS)


def test_no_orphan_docs():
    names = {f"{r.code}-{r.name}.md" for r in ALL_RULES}
    assert {p.name for p in docs_dir().glob("*.md")} == names


def test_codes_are_tl_plus_three_digits():
    for rule in ALL_RULES:
        assert re.fullmatch(r"TL\d{3}", rule.code)
        assert re.fullmatch(r"[a-z0-9-]+", rule.name)


def test_rule_command(run_cli):
    code, out, _ = run_cli("rule", "TL301")
    assert code == 0 and out.startswith("# TL301 worker-rng-duplication") and "## Use instead" in out
    code, out, _ = run_cli("rule", "worker-rng-duplication", "--output-format", "json")
    assert json.loads(out)["code"] == "TL301"
    code, out, _ = run_cli("rule", "--all")
    assert code == 0 and len(out.splitlines()) == len(ALL_RULES)
    assert re.search(r"^TL101\s+backward-under-no-grad\s+on\s+error\s", out, re.M)
    rows = json.loads(run_cli("rule", "--all", "--output-format", "json")[1])
    assert {r["code"] for r in rows} == {r.code for r in ALL_RULES}
    code, _, err = run_cli("rule", "TL999")
    assert code == 2 and "TL999" in err


def test_readme_lists_every_rule():
    readme = (docs_dir().parent / "README.md").read_text(encoding="utf-8")
    for rule in ALL_RULES:
        assert f"| [{rule.code}](rules_docs/{rule.code}-{rule.name}.md) | {rule.name} |" in readme, rule.code
