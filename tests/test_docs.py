"""Every rule has a doc with ruff's sections; `torchlint rule` prints it."""

from __future__ import annotations

import json
import re

import pytest

from torchlint.diagnostics import TOOL_CODES
from torchlint.docs import OPTIONS_SECTION, SECTIONS, doc_sections, docs_dir, rule_doc
from torchlint import catalog

# Static rules, the runtime-only checks of `torchlint run` and torchlint's own codes (TL002,
# TL003) share codes, docs and `torchlint rule`.
EVERY_CODE = (*catalog.static_rules(), *catalog.runtime_checks(), *TOOL_CODES)


@pytest.mark.parametrize("rule", EVERY_CODE, ids=lambda r: r.code)
def test_doc_exists_with_all_sections(rule):
    path = docs_dir() / f"{rule.code}-{rule.name}.md"
    assert path.is_file(), f"missing {path.name}"
    text = rule_doc(rule.code)
    assert text.startswith(f"# {rule.code} {rule.name}\n")
    default = "on" if rule.default_enabled else "off"
    assert f"**Default:** {default} · **Severity:** {rule.severity}" in text
    sections = doc_sections(text)
    expected = list(SECTIONS)
    if getattr(rule, "options", None):  # every typed option listed, before References
        expected.insert(expected.index("References"), OPTIONS_SECTION)
        assert all(f"- `{key}` (" in sections[OPTIONS_SECTION] for key in rule.options), sections[OPTIONS_SECTION]
    assert list(sections) == expected, f"{path.name}: sections {list(sections)}"
    assert all(sections[s] for s in expected)


def test_no_orphan_docs():
    names = {f"{r.code}-{r.name}.md" for r in EVERY_CODE}
    assert {p.name for p in docs_dir().glob("TL*.md")} == names


def test_codes_are_tl_plus_three_digits():
    for rule in EVERY_CODE:
        assert re.fullmatch(r"TL\d{3}", rule.code)
        assert re.fullmatch(r"[a-z0-9-]+", rule.name)
    assert len({r.code for r in EVERY_CODE}) == len(EVERY_CODE), "a runtime check reuses a static rule's code"
    assert len({r.name for r in EVERY_CODE}) == len(EVERY_CODE), "a runtime check reuses a static rule's name"


def test_rule_command(run_cli):
    code, out, _ = run_cli("rule", "TL301")
    assert code == 0 and out.startswith("# TL301 worker-rng-duplication") and "## Use instead" in out
    code, out, _ = run_cli("rule", "worker-rng-duplication", "--output-format", "json")
    assert json.loads(out)["code"] == "TL301"
    code, out, _ = run_cli("rule", "--all")
    assert code == 0 and len(out.splitlines()) == len(EVERY_CODE)
    assert re.search(r"^TL101\s+backward-under-no-grad\s+on\s+error\s", out, re.M)
    rows = json.loads(run_cli("rule", "--all", "--output-format", "json")[1])
    assert {r["code"] for r in rows} == {r.code for r in EVERY_CODE}
    assert [r["code"] for r in rows] == sorted(r["code"] for r in rows)
    assert {r["code"] for r in rows if r["default"] == "run"} == {c.code for c in catalog.runtime_checks()}
    code, out, _ = run_cli("rule", "TL320")
    assert code == 0 and out.startswith("# TL320 identical-worker-random-streams") and "## Use instead" in out
    assert "TL320" not in catalog.static_codes()  # a runtime check, not an AST rule: `check --select TL320` rejects it
    code, _, err = run_cli("rule", "TL999")
    assert code == 2 and "TL999" in err


def test_readme_lists_every_rule():
    readme = (docs_dir().parent / "README.md").read_text(encoding="utf-8")
    for rule in EVERY_CODE:
        assert f"| [{rule.code}](rules_docs/{rule.code}-{rule.name}.md) | {rule.name} |" in readme, rule.code


def test_torchlints_own_codes_are_explained_but_not_selectable(run_cli):
    code, out, _ = run_cli("rule", "TL002")
    assert code == 0 and out.startswith("# TL002 config-error") and "--ignore TL000" in out
    code, out, _ = run_cli("rule", "internal-error")
    assert code == 0 and out.startswith("# TL003 internal-error")
    assert "TL002" not in catalog.static_codes() and "TL003" not in catalog.static_codes()  # no selection turns them off


# Every static rule flags its own documented `## Example` and is silent on its `## Use instead`,
# each linted alone after these imports: the docs show what the rule catches, not a fragment that
# needs context the reader cannot see.
EXAMPLE_IMPORTS = ("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\nimport numpy as np\n"
                   "import torch.distributed as dist\nfrom torch.utils.data import DataLoader, Dataset\n"
                   "from torch.nn.parallel import DistributedDataParallel as DDP\n")
# Rules whose `## Use instead` has no python block to lint, each with the reason.
FIX_WITHOUT_CODE = {"TL000": "the fix is to repair the syntax or the encoding, said in prose"}


def _lint_doc_blocks(rule, section: str) -> set[str] | None:
    """The codes found in the python blocks of `section`, or None when it has none. The rules a
    `# noqa:` of the blocks names are enabled too: TL001 judges only enabled codes."""
    from torchlint.checker import check_source

    blocks = re.findall(r"```python\n(.*?)```", doc_sections(rule_doc(rule.code))[section], re.S)
    if not blocks:
        return None
    source = EXAMPLE_IMPORTS + "\n".join(blocks)
    named = set(re.findall(r"TL\d{3}", " ".join(re.findall(r"#\s*noqa:([^\n]*)", source))))
    others = [r for r in catalog.static_rules() if r.code in named and r.code != rule.code]
    return {f.code for f in check_source("example.py", source.encode("utf-8"), [rule, *others])}


@pytest.mark.parametrize("rule", catalog.static_rules(), ids=lambda r: r.code)
def test_a_rule_flags_its_own_documented_example(rule):
    found = _lint_doc_blocks(rule, "Example")
    assert found is not None, f"{rule.code}: the Example section has no python block"
    assert rule.code in found, f"{rule.code} is silent on its own documented example"


@pytest.mark.parametrize("rule", catalog.static_rules(), ids=lambda r: r.code)
def test_a_rule_is_silent_on_its_documented_fix(rule):
    found = _lint_doc_blocks(rule, "Use instead")
    if rule.code in FIX_WITHOUT_CODE:
        assert found is None, f"{rule.code} has a python fix now: drop it from FIX_WITHOUT_CODE"
        return
    assert found is not None, f"{rule.code}: the Use instead section has no python block"
    assert rule.code not in found, f"{rule.code} flags its own documented fix"
