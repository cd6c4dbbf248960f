"""Every runtime judge's fixtures: runnable programs beside the rule's static fixtures, with the
expected verdicts written on the lines they are about.

- `tests/fixtures/<CODE>/run/*.py` run under `torchlint run --output-format json`;
- `tests/fixtures/<CODE>/api/*.py` run in a child Python that leaves `findings` (what
  `check_training_step` / `monitored()` returned) for the harness to read.

A line ending in `# run: CODE VERDICT` expects a finding of CODE at that line with that runtime
verdict (another rule's finding is written with its name, `# run: NAME VERDICT`, so that a rule's
code appears only in its own fixtures); `# run: CODE VERDICT: text` also expects `text` in its evidence (for a runtime check,
its message). Every confirmed finding must be expected: a program without `# run:` lines is a
clean twin. Each runtime check has a program that confirms it and a clean twin; each static
rule with a runtime judge that has run fixtures shows both a confirmed and a "no" verdict."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from test_runtime_run import findings_of, torchlint_run
from torchlint import catalog

pytest.importorskip("torch")

pytestmark = pytest.mark.torch

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
RUN_PROGRAMS = sorted(FIXTURES.glob("TL*/run/*.py"))
API_PROGRAMS = sorted(FIXTURES.glob("TL*/api/*.py"))
EXPECT = re.compile(r"#\s*run:\s*(TL\d{3}|[a-z][a-z0-9-]*[a-z0-9])\s+([a-z-]+)(?::\s*(.*?))?\s*$")

# Runs a fixture program in this child and prints the findings it left in `findings`.
API_HARNESS = """
import json, runpy, sys
namespace = runpy.run_path(sys.argv[1], run_name="__main__")
print(json.dumps([{"code": f.code, "row": f.row, "path": f.path, "message": f.message,
                   "verdict": f.runtime.verdict if f.runtime else None} for f in namespace["findings"]]))
"""


def expectations(path: Path) -> list[tuple[str, int, str, str]]:
    """(code, row, verdict, text) of each `# run:` line."""
    out = []
    for row, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        match = EXPECT.search(line)
        if match:
            out.append((_code(path, row, match.group(1)), row, match.group(2), match.group(3) or ""))
    return out


def _code(path: Path, row: int, code_or_name: str) -> str:
    """A code as written, or the code of the rule or check a name names."""
    if code_or_name.startswith("TL"):
        return code_or_name
    entry = catalog.lookup(code_or_name)
    assert entry is not None, f"{path.name}:{row}: no rule or check named {code_or_name!r}"
    return entry.code


def check(path: Path, found: list[dict]) -> None:
    for code, row, verdict, text in expectations(path):
        here = [f for f in found if f["code"] == code and f["row"] == row]
        assert here, f"{path.name}:{row}: no {code} finding; found {[(f['code'], f['row']) for f in found]}"
        assert any(f["verdict"] == verdict and text in f["evidence"] for f in here), \
            f"{path.name}:{row}: expected {code} {verdict} with {text!r}, got {here}"
    expected = {(code, row) for code, row, verdict, _ in expectations(path) if verdict == "confirmed"}
    unexpected = sorted({(f["code"], f["row"]) for f in found if f["verdict"] == "confirmed"} - expected)
    assert not unexpected, f"{path.name}: confirmed but not expected: {unexpected}"


@pytest.mark.parametrize("path", RUN_PROGRAMS, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_run_fixture(tmp_path, path):
    program = tmp_path / path.name
    shutil.copy(path, program)  # it may write files (a checkpoint) next to itself
    result = torchlint_run("--output-format", "json", "--", sys.executable, program.name, cwd=tmp_path)
    assert result.returncode in (0, 1), result.stderr[-3000:]
    found = [{"code": f["code"], "row": f["location"]["row"], "verdict": f["runtime"]["verdict"],
              "evidence": f["runtime"]["evidence"]}
             for f in findings_of(result) if Path(f["filename"]).resolve() == program.resolve()]
    check(path, found)


@pytest.mark.parametrize("path", API_PROGRAMS, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_api_fixture(path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    # A child per program: a training step leaves torch state behind (meta kernels, ~80 MB).
    result = subprocess.run([sys.executable, "-c", API_HARNESS, str(path)], cwd=path.parent, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    found = json.loads(result.stdout.strip().splitlines()[-1])
    assert all(f["path"] == path.name for f in found), found  # located in the program's own lines
    check(path, [{**f, "evidence": f["message"]} for f in found])


def _sides(code: str) -> tuple[set[str], int]:
    """The verdicts the fixtures expect for `code`, and how many of its programs are clean."""
    verdicts, clean = set(), 0
    for path in [*RUN_PROGRAMS, *API_PROGRAMS]:
        if path.parent.parent.name != code:
            continue
        mine = [v for c, _, v, _ in expectations(path) if c == code]
        verdicts.update(mine)
        clean += "confirmed" not in mine
    return verdicts, clean


@pytest.mark.parametrize("check_class", catalog.runtime_checks(), ids=lambda c: c.code)
def test_every_runtime_check_has_a_firing_and_a_clean_program(check_class):
    verdicts, clean = _sides(check_class.code)
    assert "confirmed" in verdicts, f"{check_class.code}: no fixture program confirms it"
    assert clean, f"{check_class.code}: no clean twin among its fixture programs"


@pytest.mark.parametrize("rule", [r for r in catalog.static_rules() if r.evidence.runtime], ids=lambda r: r.code)
def test_runtime_judges_with_fixtures_show_both_sides(rule):
    verdicts, _ = _sides(rule.code)
    if not verdicts:
        pytest.skip(f"{rule.code}: its runtime judge is tested in test_runtime_run.py")
    assert "confirmed" in verdicts and verdicts - {"confirmed"}, f"{rule.code}: fixtures show only {verdicts}"


def test_expectations_are_read(tmp_path):
    path = tmp_path / "program.py"
    named = tmp_path / "named.py"
    named.write_text("w = 4  # run: parameter-without-gradient not-observed\n", encoding="utf-8")
    assert expectations(named) == [(catalog.lookup("parameter-without-gradient").code, 1, "not-observed", "")]
    path.write_text("x = 1  # run: TL999 confirmed: at step 0\ny = 2  # run: TL998 not-observed\nz = 3  # runs: TL1\n",
                    encoding="utf-8")
    assert expectations(path) == [("TL999", 1, "confirmed", "at step 0"), ("TL998", 2, "not-observed", "")]
    with pytest.raises(AssertionError, match="confirmed but not expected"):
        check(path, [{"code": "TL999", "row": 1, "verdict": "confirmed", "evidence": "at step 0: x"},
                     {"code": "TL998", "row": 2, "verdict": "not-observed", "evidence": ""},
                     {"code": "TL997", "row": 3, "verdict": "confirmed", "evidence": ""}])
