"""The flake8 plugin reports the same codes, at the same places, as `torchlint check`."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from test_cli import BAD, write

FIXTURES = Path(__file__).parent / "fixtures"
REPO = FIXTURES.parent.parent


def _registered() -> bool:
    try:
        group = entry_points(group="flake8.extension")
    except TypeError:  # Python < 3.10
        group = entry_points().get("flake8.extension", [])  # type: ignore[attr-defined]
    return any(ep.name == "TL" and ep.value.startswith("torchlint.") for ep in group)


pytestmark = pytest.mark.skipif(not _registered(),
                                reason="torchlint's flake8 entry point is not installed (pip install -e .)")
FLAKE8_LINE = re.compile(r"^(?P<path>.*?):(?P<row>\d+):(?P<col>\d+): (?P<code>TL\d{3}) ")


def _flake8(*args: str, cwd: Path) -> set[tuple[str, int, int, str]]:
    proc = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select", "TL", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=600)
    assert proc.returncode in (0, 1), proc.stderr
    out = set()
    for line in proc.stdout.splitlines():
        m = FLAKE8_LINE.match(line)
        assert m, line
        out.add((str((cwd / m["path"]).resolve()), int(m["row"]), int(m["col"]), m["code"]))
    return out


def _torchlint(*args: str, cwd: Path) -> set[tuple[str, int, int, str]]:
    proc = subprocess.run([sys.executable, "-m", "torchlint", "check", *args, "--output-format", "json",
                           "--no-cache", "--exit-zero"], cwd=cwd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return {(f["filename"], f["location"]["row"], f["location"]["column"], f["code"])
            for f in json.loads(proc.stdout)
            # flake8 reports syntax errors as E999, and does not read notebooks
            if f["code"] != "TL000" and f["cell"] is None}


def test_same_findings_as_torchlint_check_on_the_fixtures():
    # --isolated: this repository's own config excludes tests/fixtures (and sets nothing else).
    ours = _torchlint(str(FIXTURES), "--isolated", cwd=REPO)
    theirs = _flake8(str(FIXTURES), cwd=REPO)
    assert len(ours) > 100  # the fixtures really were linted
    assert theirs == ours
    assert {code for *_, code in ours} == {code for *_, code in theirs}


def test_plugin_uses_torchlint_config_and_flake8_noqa(tmp_path):
    write(tmp_path, "pyproject.toml", '[tool.torchlint]\nignore = ["TL102"]\n')
    write(tmp_path, "bad.py", BAD)
    write(tmp_path, "quiet.py", BAD.replace("loss.backward()", "loss.backward()  # noqa: TL101"))
    found = _flake8(".", cwd=tmp_path)
    assert {(Path(p).name, code) for p, _, _, code in found} == {("bad.py", "TL101")}
    assert found == _torchlint(".", cwd=tmp_path)


def test_declared_encoding_gives_the_same_columns(tmp_path):
    source = "# -*- coding: latin-1 -*-\nimport torch\nwith torch.no_grad():\n    l = m(x)\n    \u00e9 = 1; l.backward()\n"
    write(tmp_path, "lat.py", source.encode("latin-1"))
    found = _flake8(".", cwd=tmp_path)
    assert {(row, col, code) for _, row, col, code in found} == {(5, 12, "TL101")}
    assert found == _torchlint(".", cwd=tmp_path)


def test_ignoring_tl000_does_not_hide_a_broken_config(tmp_path):
    write(tmp_path, "pyproject.toml", '[tool.torchlint]\nselect = ["TLX"]\n')
    write(tmp_path, "bad.py", BAD)
    for ignore in ("--extend-ignore=TL000", "--ignore=TL000"):
        proc = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select", "TL", ignore, "."],
                              cwd=tmp_path, capture_output=True, text=True, timeout=600)
        [line] = proc.stdout.splitlines()
        assert line.startswith("./bad.py:1:1: TL002 torchlint configuration error: ") and "TLX" in line, proc.stderr
    proc = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select", "TL", "--extend-ignore=TL002", "."],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.stdout == ""  # flake8's own filter still applies to TL002 when asked by its code
