"""Inputs a sceptical user will throw at it: odd encodings, line endings, deep nesting."""

from __future__ import annotations

import json
import sys

import pytest

from conftest import FIXTURES
from test_cli import write
from torchlint import checker
from torchlint import catalog

NO_GRAD = "import torch\nwith torch.no_grad():\n    l = m(x)\n    l.backward()\n"


def _rows(run_cli, *args):
    code, out, err = run_cli("check", *args, "--no-cache", "--output-format", "json")
    assert "Traceback" not in err
    return code, [(f["filename"].rsplit("/", 1)[-1], f["code"], f["location"]["row"], f["location"]["column"])
                  for f in json.loads(out)], err


@pytest.mark.parametrize("name, data, expected", [
    ("crlf.py", NO_GRAD.replace("\n", "\r\n").encode(), [("crlf.py", "TL101", 4, 5)]),
    ("bom.py", b"\xef\xbb\xbf" + NO_GRAD.encode(), [("bom.py", "TL101", 4, 5)]),
    ("tabs.py", NO_GRAD.replace("    ", "\t").encode(), [("tabs.py", "TL101", 4, 2)]),
    ("empty.py", b"", []),
    ("comments.py", b"# torch, only in a comment\n", []),
    ("nul.py", b"import torch\nx = 1\x00\n", [("nul.py", "TL000", 1, 1)]),
])
def test_odd_files(tmp_path, run_cli, name, data, expected):
    write(tmp_path, name, data)
    code, rows, _ = _rows(run_cli, name)
    assert rows == expected
    assert code == (1 if expected else 0)


def test_expressions_nested_past_the_recursion_limit():
    # 1,500 nested additions parse everywhere, but need ~3,000 frames to walk recursively.
    source = "import torch\nx = " + " + ".join(["torch.zeros(1)"] * 1500) + "\n" + NO_GRAD.split("\n", 1)[1]
    rules = [r for r in catalog.static_rules() if r.code != "TL000"]
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(1200)
    try:
        findings = checker.check_source("deep.py", source.encode(), rules)
    finally:
        sys.setrecursionlimit(old)
    assert [(f.code, f.row) for f in findings] == [("TL101", 5)]


def test_absurdly_deep_file_is_linted_or_reported_never_a_crash(tmp_path, run_cli):
    # Whether the parser of the running Python accepts 20,000 nested additions differs by
    # version; either way the user gets findings or a TL000, not an internal error.
    deep = "import torch\nx = " + " + ".join(["torch.zeros(1)"] * 20000) + "\n" + NO_GRAD.split("\n", 1)[1]
    write(tmp_path, "deep.py", deep)
    code, rows, err = _rows(run_cli, "deep.py")
    assert code == 1 and "internal error" not in err
    assert rows == [("deep.py", "TL101", 5, 5)] or (len(rows) == 1 and rows[0][1] == "TL000")


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("TL*/*.py")), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_deep_walker_matches_the_recursive_walker(path, monkeypatch):
    data = path.read_bytes()
    rules = [r for r in catalog.static_rules() if r.code != "TL000"]
    fast = checker.check_source(str(path), data, rules)
    monkeypatch.setattr(checker, "Walker", checker.DeepWalker)
    deep = checker.check_source(str(path), data, rules)
    assert [(f.code, f.row, f.col, f.message) for f in deep] == [(f.code, f.row, f.col, f.message) for f in fast]
