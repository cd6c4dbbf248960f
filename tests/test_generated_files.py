"""rules_docs/*.md, the README's rule tables and the --verify evidence index are generated from
the catalog (each rule's docstring, metadata and `evidence`) by scripts/generate_all.py; they
must be up to date. With `--snapshot-update` the test rewrites them instead (ruff's
`generate-all`)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "generate_all.py"


def _generator():
    spec = importlib.util.spec_from_file_location("generate_all", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_files_are_up_to_date(request):
    gen = _generator()
    if request.config.getoption("--snapshot-update"):
        gen.update()
    stale = [str(p.relative_to(ROOT)) for p in gen.stale()]
    assert not stale, f"out of date: {stale}; run `python scripts/generate_all.py`"


def test_a_page_is_the_docstring_under_the_metadata_header():
    from torchlint import catalog

    gen = _generator()
    for entry in catalog.entries():
        page = gen.doc_page(entry)
        default = "on" if entry.default_enabled else "off"
        header = f"# {entry.code} {entry.name}\n\n**Default:** {default} · **Severity:** {entry.severity}\n\n"
        assert page.startswith(header), entry.code
        doc_lines = [line.strip() for line in gen._peers().render_refs(entry.__doc__).strip().splitlines()]
        body = page[len(header):]
        options = getattr(entry, "options", {})
        if options:  # the generated Options section, from the rule's typed options
            before, section, after = body.partition("## Options\n")
            assert section and all(opt.doc_line(key) in after for key, opt in options.items()), entry.code
            body = before + after[after.index("## References"):]
        page_lines = [line.strip() for line in body.strip().splitlines()]
        assert page_lines == doc_lines, entry.code  # the docstring, dedented, and nothing else


def test_check_mode_names_a_stale_page_and_update_repairs_it(tmp_path, monkeypatch):
    """The generator notices an edited page, a page of no rule and an edited README table,
    and `update` restores all three (run on a copy, not the checkout)."""
    gen = _generator()
    docs = tmp_path / "rules_docs"
    docs.mkdir()
    for path, text in gen.expected_files().items():
        copy = tmp_path / path.relative_to(ROOT)
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text(text, encoding="utf-8")
    monkeypatch.setattr(gen, "DOCS", docs)
    monkeypatch.setattr(gen, "README", tmp_path / "README.md")
    monkeypatch.setattr(gen, "EVIDENCE_INDEX", tmp_path / gen.EVIDENCE_INDEX.relative_to(ROOT))
    monkeypatch.setattr(gen, "EVIDENCE_DIR", tmp_path / gen.EVIDENCE_DIR.relative_to(ROOT))
    assert gen.stale() == []
    from torchlint import catalog

    rule = catalog.static_rules()[1]
    page = docs / gen.page_name(rule)
    original = page.read_text(encoding="utf-8")
    page.write_text(original.replace("## What it does", "## What it did"), encoding="utf-8")
    (docs / "TL999-gone.md").write_text("# TL999 gone\n", encoding="utf-8")
    readme = tmp_path / "README.md"
    row = f"| {rule.name} | {'on' if rule.default_enabled else 'off'} |"
    assert row in readme.read_text(encoding="utf-8")
    readme.write_text(readme.read_text(encoding="utf-8").replace(row, f"| {rule.name} | maybe |"), encoding="utf-8")
    gen.EVIDENCE_INDEX.write_text("PROBES = {}\n", encoding="utf-8")
    (gen.EVIDENCE_DIR / "evidence_gone.py").write_text("PROBES = {}\n", encoding="utf-8")  # a family with no evidence
    assert {p.name for p in gen.stale()} == {page.name, "TL999-gone.md", "README.md", "evidence_index.py",
                                             "evidence_gone.py"}
    gen.update()
    assert gen.stale() == [] and not (docs / "TL999-gone.md").exists()
    assert not (gen.EVIDENCE_DIR / "evidence_gone.py").exists()
    assert page.read_text(encoding="utf-8") == original


def test_the_script_checks_from_the_command_line():
    done = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr


def test_evidence_beside_its_rule_is_copied_with_its_helpers_and_must_be_self_contained():
    """Only the copied text reaches the worker: the evidence function comes with the module-level
    helpers and constants it uses; a name the module imports, or an import of torchlint (or of
    anything the worker lacks), would fail there, so the generator refuses it here."""
    gen = _generator()
    table = gen._top_level(textwrap.dedent("""
        import ast
        from torchlint.checker import FileContext
        LIMIT = 3
        def _helper():
            return LIMIT
        def _unused():
            return 0
        def probe(params, device):
            import torch
            from _evidence import first_line
            return "confirmed", str(_helper())
        def leans(params, device):
            return "confirmed", str(ast)
        def imports(params, device):
            from torchlint import catalog
            return "confirmed", ""
        def imports_other(params, device):
            import requests
            return "confirmed", ""
    """))
    assert gen._copied_names("TLx", ["probe"], table) == ["LIMIT", "_helper", "probe"]
    with pytest.raises(SystemExit, match="'ast', which its module imports"):
        gen._copied_names("TLx", ["leans"], table)
    for bad in ("imports", "imports_other"):
        with pytest.raises(SystemExit, match="the worker has only torch"):
            gen._copied_names("TLx", [bad], table)
