"""`--fix` and friends: fixture snapshots, fixed point, parse safety, atomic writes, the
fix-related options and config keys, TL001 (unused noqa) and `--add-noqa`."""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

import pytest

from conftest import FIXTURES, fixed_text
from test_cli import write
from torchlint.linter import FileTask, lint_task

FIXTURE_FILES = sorted(FIXTURES.glob("TL*/*.py"))


def _findings(path: Path, codes: set[str]):
    result = lint_task(FileTask(path=str(path), display=str(path), codes=frozenset(codes)))
    assert result.internal_error is None, result.internal_error
    return result.findings


def _fixable_fixtures() -> list[Path]:
    return [p for p in FIXTURE_FILES if any(f.fix for f in _findings(p, {p.parent.name}))]


FIXABLE = _fixable_fixtures()


def _fix_cli(run_cli, path: Path, code: str, *extra: str):
    return run_cli("check", "--isolated", "--no-cache", "--select", code, "--fix", "--unsafe-fixes", *extra,
                   str(path), cwd=path.parent)


@pytest.mark.parametrize("fixture", FIXABLE, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fix_matches_snapshot_and_second_fix_is_a_no_op(fixture, tmp_path, run_cli):
    code = fixture.parent.name
    target = tmp_path / fixture.name
    shutil.copy(fixture, target)
    _fix_cli(run_cli, target, code)
    fixed = target.read_text(encoding="utf-8")
    # The fixture's .snap shows this text as its fix diffs (tests/test_snapshots.py).
    assert fixed == fixed_text(fixture, code, unsafe=True)
    assert fixed != fixture.read_text(encoding="utf-8")
    ast.parse(fixed)
    # Every finding that had a fix is gone (or its fix was not certain enough to apply).
    left = [f for f in _findings(target, {code}) if f.fix]
    assert not left, [(f.row, f.message) for f in left]
    # Fixed point: a second run changes nothing and says so.
    rc, out, err = _fix_cli(run_cli, target, code, "--diff")
    assert rc == 0 and out == "", out
    assert target.read_text(encoding="utf-8") == fixed


def test_snapshots_show_a_fix_exactly_for_the_fixable_fixtures():
    def shows_a_fix(path: Path) -> bool:
        snap = path.with_suffix(".snap")
        text = snap.read_text(encoding="utf-8") if snap.exists() else ""
        return "\nSafe fix (--fix):\n" in text or "\nUnsafe fix (--fix --unsafe-fixes" in text

    shown = {p for p in FIXTURE_FILES if shows_a_fix(p)}
    assert shown == set(FIXABLE) and len(FIXABLE) > 30


def test_fix_keeps_comments_formatting_and_mode(tmp_path, run_cli):
    source = textwrap.dedent("""\
        import torch  # the framework

        # set-up
        with torch.no_grad:   # spacing kept
            w.require_grad  =  True  # odd spacing kept
            x = torch.zeros(
                3,  # rows
                4,
            ).cuda()
    """)
    path = write(tmp_path, "m.py", source)
    os.chmod(path, 0o640)
    rc, out, err = run_cli("check", "--isolated", "--no-cache", "--select", "TL108,TL109,TL801", "--fix", "m.py")
    assert rc == 0, out + err
    assert path.read_text() == textwrap.dedent("""\
        import torch  # the framework

        # set-up
        with torch.no_grad():   # spacing kept
            w.requires_grad  =  True  # odd spacing kept
            x = torch.zeros(
                3,  # rows
                4, device="cuda",
            )
    """)
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["m.py"]  # no temp file left behind


def test_crlf_bom_and_latin1_cookie_survive(tmp_path, run_cli):
    crlf = write(tmp_path, "crlf.py", b"\xef\xbb\xbfimport torch\r\nwith torch.no_grad:\r\n    pass\r\n")
    latin = write(tmp_path, "latin.py", "# -*- coding: latin-1 -*-\nimport torch\ns = 'caf\u00e9'\n"
                  "with torch.no_grad:\n    pass\n".encode("latin-1"))
    run_cli("check", "--isolated", "--no-cache", "--select", "TL108", "--fix", "crlf.py", "latin.py")
    assert crlf.read_bytes() == b"\xef\xbb\xbfimport torch\r\nwith torch.no_grad():\r\n    pass\r\n"
    assert latin.read_bytes().decode("latin-1").endswith("s = 'caf\u00e9'\nwith torch.no_grad():\n    pass\n")


def test_unsafe_fixes_need_the_flag_and_the_hint_says_so(tmp_path, run_cli):
    path = write(tmp_path, "a.py", "import torch\nstate = torch.load('m.pt')\n")
    rc, out, _ = run_cli("check", "--isolated", "--no-cache", "--select", "TL601", "a.py")
    assert rc == 1 and "1 hidden fix can be enabled with `--fix --unsafe-fixes`" in out
    rc, out, _ = run_cli("check", "--isolated", "--no-cache", "--select", "TL601", "--fix", "a.py")
    assert rc == 1 and "weights_only" not in path.read_text()
    rc, out, _ = run_cli("check", "--isolated", "--no-cache", "--select", "TL601", "--fix", "--unsafe-fixes", "a.py")
    assert rc == 0 and path.read_text() == "import torch\nstate = torch.load('m.pt', weights_only=True)\n"


def test_diff_prints_and_exits_1_without_writing(tmp_path, run_cli):
    path = write(tmp_path, "a.py", "import torch\nwith torch.no_grad:\n    pass\n")
    rc, out, err = run_cli("check", "--isolated", "--no-cache", "--select", "TL108", "--diff", "a.py")
    assert rc == 1
    assert out == ("--- a/a.py\n+++ b/a.py\n@@ -1,3 +1,3 @@\n import torch\n-with torch.no_grad:\n"
                   "+with torch.no_grad():\n     pass\n")
    assert "Would fix 1 finding." in err
    assert path.read_text() == "import torch\nwith torch.no_grad:\n    pass\n"
    write(tmp_path, "b.py", "import torch\nwith torch.no_grad():\n    pass\n")
    assert run_cli("check", "--isolated", "--no-cache", "--diff", "b.py")[0] == 0


def test_diff_splits_lines_where_python_does_and_marks_a_missing_final_newline(tmp_path, run_cli):
    """A form feed or U+2028 inside a line is no line break for Python (nor for `git apply`),
    and a fixed last line without a newline must not run into the diff's next line."""
    source = "import torch\n\x0c\nwith torch.no_grad:  # a\u2028b\n    pass"
    write(tmp_path, "a.py", source)
    rc, out, _ = run_cli("check", "--isolated", "--no-cache", "--select", "TL108", "--diff", "a.py")
    assert rc == 1
    assert out == ("--- a/a.py\n+++ b/a.py\n@@ -1,4 +1,4 @@\n import torch\n \x0c\n-with torch.no_grad:  # a\u2028b\n"
                   "+with torch.no_grad():  # a\u2028b\n     pass\n\\ No newline at end of file\n")
    write(tmp_path, "b.py", "import torch\nwith torch.no_grad: pass")
    rc, out, _ = run_cli("check", "--isolated", "--no-cache", "--select", "TL108", "--diff", "b.py")
    assert out.endswith("-with torch.no_grad: pass\n\\ No newline at end of file\n"
                        "+with torch.no_grad(): pass\n\\ No newline at end of file\n"), out
    if shutil.which("git"):  # and git applies it
        subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
        (tmp_path / "b.patch").write_text(out, encoding="utf-8")
        subprocess.run(["git", "apply", "b.patch"], cwd=tmp_path, check=True)
        assert (tmp_path / "b.py").read_text(encoding="utf-8") == "import torch\nwith torch.no_grad(): pass"


def test_fix_only_exits_0_and_show_fixes_lists_them(tmp_path, run_cli):
    write(tmp_path, "a.py", "import torch\nwith torch.no_grad:\n    model.forward(x)\n")
    rc, out, err = run_cli("check", "--isolated", "--no-cache", "--fix-only", "a.py")
    assert rc == 0 and out == "" and "Fixed 1 finding." in err
    write(tmp_path, "b.py", "import torch\nwith torch.no_grad:\n    w.require_grad = True\n")
    rc, out, err = run_cli("check", "--isolated", "--no-cache", "--fix", "--show-fixes", "b.py")
    assert "Fixed 2 findings:\n- b.py:\n    1 × TL108 (grad-mode-not-called)\n    1 × TL109 (requires-grad-typo)\n" in out


def test_fixable_unfixable_and_fix_config_keys(tmp_path, run_cli):
    write(tmp_path, "pyproject.toml", '[tool.torchlint]\nfix = true\nunfixable = ["TL109"]\n')
    path = write(tmp_path, "a.py", "import torch\nwith torch.no_grad:\n    w.require_grad = True\n")
    rc, out, _ = run_cli("check", "--no-cache", "a.py")
    assert path.read_text() == "import torch\nwith torch.no_grad():\n    w.require_grad = True\n"
    assert rc == 1 and "TL109" in out
    write(tmp_path, "pyproject.toml", '[tool.torchlint]\nfix = true\nfixable = ["TL2"]\nextend-fixable = ["TL109"]\n')
    rc, out, _ = run_cli("check", "--no-cache", "a.py")
    assert "w.requires_grad" in path.read_text()
    path.write_text("import torch\nwith torch.no_grad:\n    pass\n")
    rc, _, _ = run_cli("check", "--no-cache", "--no-fix", "a.py")
    assert rc == 1 and "no_grad:" in path.read_text()  # --no-fix beats `fix = true`


@pytest.mark.parametrize("table, message", [
    ("fix = 1", "`fix` must be true or false"),
    ('unsafe-fixes = "yes"', "`unsafe-fixes` must be true or false"),
    ('fixable = "TL1"', "`fixable` must be a list of strings"),
    ('unfixable = ["XX1"]', "unknown rule selector 'XX1'"),
    ('extend-fixable = [1]', "`extend-fixable` must be a list of strings"),
    ("torch-version = 2.4", '`torch-version` must be a string "MAJOR.MINOR"'),
    ('torch-version = "2"', '`torch-version` must be a string "MAJOR.MINOR"'),
])
def test_bad_fix_config_exits_2_naming_file_and_key(tmp_path, run_cli, table, message):
    write(tmp_path, "pyproject.toml", f"[tool.torchlint]\n{table}\n")
    write(tmp_path, "a.py", "import torch\n")
    rc, _, err = run_cli("check", "--no-cache", "a.py")
    assert rc == 2 and "pyproject.toml" in err and message in err, err


def test_bad_cli_options_exit_2(tmp_path, run_cli):
    write(tmp_path, "a.py", "import torch\n")
    rc, _, err = run_cli("check", "--torch-version", "latest", "a.py")
    assert rc == 2 and "--torch-version" in err
    rc, _, err = run_cli("check", "--add-noqa", "--fix", "a.py")
    assert rc == 2 and "--add-noqa" in err


def test_a_fix_that_breaks_the_file_leaves_it_unchanged(tmp_path, monkeypatch, run_cli):
    from torchlint.fix import engine

    path = write(tmp_path, "a.py", "import torch\nwith torch.no_grad:\n    pass\n")
    real_apply = engine.apply_once

    def broken(text, findings):  # a rule bug: its fix deletes a colon
        new, applied = real_apply(text, findings)
        return new.replace("():", "()"), applied

    monkeypatch.setattr(engine, "apply_once", broken)
    rc, out, err = run_cli("check", "--isolated", "--no-cache", "--fix", "a.py")
    assert rc == 2 and "produced invalid code" in err and "file left unchanged" in err
    assert path.read_text() == "import torch\nwith torch.no_grad:\n    pass\n"


def test_fixed_point_applies_fixes_that_overlap_in_later_passes():
    from torchlint.checker import check_source
    from torchlint.fix.engine import fix_text
    from torchlint import catalog

    # TL102 rewrites the whole statement, so TL109's edit inside it waits for the second pass.
    text = "import torch\n\n\ndef forward(p: torch.Tensor):\n    p.data.add_(torch.ones(2, require_grad=True))\n"
    rules = [catalog.by_code()[c] for c in ("TL102", "TL109")]

    def lint(t: str):
        return check_source("a.py", t.encode(), rules)

    outcome = fix_text(text, lint(text), lint, lambda f: True)
    assert outcome.error is None and outcome.converged
    assert outcome.text == ("import torch\n\n\ndef forward(p: torch.Tensor):\n"
                            "    with torch.no_grad():\n        p.add_(torch.ones(2, requires_grad=True))\n")
    assert outcome.applied == {"TL102": 1, "TL109": 1}
    assert fix_text(outcome.text, lint(outcome.text), lint, lambda f: True).text == outcome.text


def test_lint_only_never_imports_libcst(tmp_path):
    path = write(tmp_path, "a.py", "import torch\nwith torch.no_grad:\n    pass\nx = torch.load('f')\n")
    code = textwrap.dedent(f"""\
        import sys
        from torchlint.cli import main
        try:
            main(["check", "--no-cache", "--isolated", "--output-format", "json", {str(path)!r}])
        except SystemExit:
            pass
        print("libcst" in sys.modules, file=sys.stderr)
    """)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert json.loads(proc.stdout)[0]["fix"]["edits"], proc.stdout  # the fix is still reported
    assert proc.stderr.strip().splitlines()[-1] == "False", proc.stderr
    code_fix = code.replace('"--output-format", "json"', '"--diff"')
    proc = subprocess.run([sys.executable, "-c", code_fix], capture_output=True, text=True, env=env, timeout=120)
    assert proc.stderr.strip().splitlines()[-1] == "True", proc.stderr  # the check above can fail


def test_json_and_sarif_carry_the_fix(tmp_path, run_cli):
    write(tmp_path, "a.py", "import torch\nwith torch.no_grad:\n    pass\n")
    _, out, _ = run_cli("check", "--isolated", "--no-cache", "--output-format", "json", "a.py")
    fix = json.loads(out)[0]["fix"]
    assert fix == {"applicability": "safe", "message": "Call it: add `()`", "edits": [
        {"content": "()", "location": {"row": 2, "column": 19}, "end_location": {"row": 2, "column": 19}}]}
    _, out, _ = run_cli("check", "--isolated", "--no-cache", "--output-format", "sarif", "a.py")
    result = json.loads(out)["runs"][0]["results"][0]
    change = result["fixes"][0]["artifactChanges"][0]
    assert change["artifactLocation"]["uri"] == "a.py"
    assert change["replacements"] == [{"deletedRegion": {"startLine": 2, "startColumn": 19, "endLine": 2,
                                                         "endColumn": 19}, "insertedContent": {"text": "()"}}]


def test_stdin_fix_prints_the_fixed_source(tmp_path, run_cli):
    rc, out, err = run_cli("check", "--isolated", "--no-cache", "--fix", "-",
                           input="import torch\nwith torch.no_grad:\n    pass\n")
    assert out == "import torch\nwith torch.no_grad():\n    pass\n"


def test_a_notebook_findings_fix_counts_rows_within_its_cell(tmp_path, run_cli):
    # (--fix/--diff/--add-noqa on notebooks: tests/test_notebooks.py)
    first = {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": ["import torch\n"]}
    cell = {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
            "source": ["x = 1\n", "with torch.no_grad:\n", "    pass\n"]}
    data = json.dumps({"cells": [first, cell], "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
                       "nbformat": 4, "nbformat_minor": 5}, indent=1)
    write(tmp_path, "n.ipynb", data)
    _, out, _ = run_cli("check", "--isolated", "--no-cache", "--select", "TL108", "--output-format", "json", "n.ipynb")
    [finding] = json.loads(out)
    assert (finding["cell"], finding["location"]["row"]) == (2, 2)
    [edit] = finding["fix"]["edits"]
    assert edit["location"]["row"] == 2 and edit["content"] == "()"


# -- TL001 and --add-noqa --------------------------------------------------------

def test_unused_noqa_judges_only_enabled_tl_codes_and_fix_keeps_other_codes(tmp_path, run_cli):
    path = write(tmp_path, "a.py", textwrap.dedent("""\
        import torch
        with torch.no_grad:  # noqa: TL108
            pass
        x = torch.zeros(3)  # noqa: TL108, E501
        y = torch.zeros(3)  # noqa: TL108 keep this note
        z = torch.zeros(3)  # type: ignore  # noqa: TL108,TL109
        u = torch.zeros(3)  # noqa: TL305
        v = torch.zeros(3)  # noqa
    """))
    rc, out, _ = run_cli("check", "--isolated", "--no-cache", "--select", "TL001,TL108,TL109",
                         "--output-format", "json", "a.py")
    assert [(f["code"], f["location"]["row"]) for f in json.loads(out)] == [("TL001", 4), ("TL001", 5), ("TL001", 6)]
    run_cli("check", "--isolated", "--no-cache", "--select", "TL001,TL108,TL109", "--fix", "a.py")
    assert path.read_text() == textwrap.dedent("""\
        import torch
        with torch.no_grad:  # noqa: TL108
            pass
        x = torch.zeros(3)  # noqa: E501
        y = torch.zeros(3)  # keep this note
        z = torch.zeros(3)  # type: ignore
        u = torch.zeros(3)  # noqa: TL305
        v = torch.zeros(3)  # noqa
    """)


def test_add_noqa_then_nothing_is_reported(tmp_path, run_cli):
    path = write(tmp_path, "a.py", textwrap.dedent("""\
        import torch
        with torch.no_grad:
            w.require_grad = True  # noqa: E501
        s = torch.load('''text
        ''')
    """))
    rc, _, err = run_cli("check", "--isolated", "--no-cache", "--extend-select", "TL601", "--add-noqa", "a.py")
    assert rc == 2 and "Added 2 noqa directives." in err and "cannot take a comment" in err
    text = path.read_text()
    assert "with torch.no_grad:  # noqa: TL108\n" in text and "# noqa: E501, TL109\n" in text
    rc, out, _ = run_cli("check", "--isolated", "--no-cache", "--select", "TL108,TL109,TL001", "a.py")
    assert rc == 0, out


# -- fuzz: fixes never produce code that does not parse ------------------------------

def _mutants(text: str, seed: int) -> list[str]:
    """Cheap structural mutations of a fixture: drop, duplicate, indent or wrap lines,
    add comments and noqa directives, join lines with `;`, parenthesise an argument."""
    import random

    rng = random.Random(seed)
    lines = text.splitlines()
    out = []
    for _ in range(16):
        m = list(lines)
        for _ in range(rng.randint(1, 4)):
            if not m:
                break
            i = rng.randrange(len(m))
            op = rng.randrange(8)
            if op == 0:
                del m[i]
            elif op == 1:
                m.insert(i, m[i])
            elif op == 2:
                m[i] = "    " + m[i]
            elif op == 3:
                m[i] = m[i] + "  # noqa: TL108, TL999, E501"
            elif op == 4 and i + 1 < len(m) and m[i].strip() and m[i + 1].strip():
                m[i] = m[i] + "; " + m.pop(i + 1).strip()
            elif op == 5:
                m.insert(i, "if cond:")
                m[i + 1] = "    " + m[i + 1] if i + 1 < len(m) else m[i]
            elif op == 6:
                m[i] = m[i].replace("(", "(  # c\n", 1) if "(" in m[i] and "#" not in m[i] else m[i]
            else:  # a redundantly parenthesised argument: `f(x)` -> `f((x))`
                m[i] = re.sub(r"\(([\w.]+)\)", r"((\1))", m[i], count=1)
        out.append("\n".join(m) + "\n")
    return out


@pytest.mark.parametrize("fixture", FIXABLE, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fuzz_fixes_of_mutated_fixtures_always_parse(fixture):
    from torchlint.checker import check_source
    from torchlint.fix.engine import fix_text
    from torchlint import catalog

    rules = [r for r in catalog.static_rules() if r.code != "TL000"]

    def lint(t: str):
        return check_source("m.py", t.encode(), rules)

    tried = 0
    for mutant in (_mutants(fixture.read_text(encoding="utf-8"), seed=zlib.crc32(str(fixture).encode()))):
        try:
            ast.parse(mutant)
        except SyntaxError:
            continue
        tried += 1
        outcome = fix_text(mutant, lint(mutant), lint, lambda f: True)
        assert outcome.error is None, (outcome.error, mutant)
        ast.parse(outcome.text)
        assert fix_text(outcome.text, lint(outcome.text), lint, lambda f: True).text == outcome.text, mutant
    assert tried, "no mutant parsed"
