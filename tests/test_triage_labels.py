"""benchmarks/triage_labels.py (labels from triage rounds) and the wrong-verdict count of
benchmarks/verify_corpus.py that scores --verify against them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def modules(benchmark_scripts):
    return benchmark_scripts("triage_labels", "verify_corpus")


def _round(root: Path, code: str, headers: list[str], answers: list[str]) -> Path:
    (root / "verdicts").mkdir(parents=True, exist_ok=True)
    (root / f"{code}.md").write_text("".join(f"### {i}. {h} message\n\ncode\n\n" for i, h in enumerate(headers, 1)))
    (root / "verdicts" / f"{code}.md").write_text(f"# {code} verdicts\n\n" + "".join(
        f"{i}. {a} — because\n" for i, a in enumerate(answers, 1)))
    return root


def test_labels_follow_the_packet_numbering_notebook_cells_included(modules, tmp_path):
    labels_of, _ = modules
    r = _round(tmp_path / "r1", "TL205", ["p/a.py:3", "p/nb.ipynb:cell 4:2", "p/b.py:9"], ["TRUE", "FALSE", "UNSURE"])
    assert labels_of.round_labels(r) == {"p/a.py:3:TL205": True, "p/nb.ipynb:cell 4:2:TL205": False}


def test_reasons_are_kept_with_each_answer(modules, tmp_path, monkeypatch):
    labels_of, _ = modules
    r = _round(tmp_path / "r1", "TL111", ["p/a.py:3", "p/b.py:4"], ["**TRUE**", "FALSE"])
    out, reasons = tmp_path / "labels.json", tmp_path / "reasons.md"
    monkeypatch.setattr(sys, "argv", ["triage_labels.py", str(r), "--out", str(out), "--reasons", str(reasons)])
    labels_of.main()
    assert labels_of.round_answers(r) == {"p/a.py:3:TL111": (True, "because"), "p/b.py:4:TL111": (False, "because")}
    assert "- `p/b.py:4:TL111`: FALSE - because\n" in reasons.read_text()


def test_a_finding_answered_both_ways_gets_no_label(modules, tmp_path, monkeypatch, capsys):
    labels_of, _ = modules
    one = _round(tmp_path / "r1", "TL601", ["p/a.py:3", "p/b.py:4"], ["TRUE", "TRUE"])
    two = _round(tmp_path / "r2", "TL601", ["p/a.py:3"], ["FALSE"])
    out = tmp_path / "labels.json"
    monkeypatch.setattr(sys, "argv", ["triage_labels.py", str(one), str(two), "--out", str(out)])
    labels_of.main()
    assert out.read_text().count(":TL601") == 1 and "p/b.py:4:TL601" in out.read_text()
    assert "answered both ways, left out: p/a.py:3:TL601" in capsys.readouterr().out


def _finding(path: str, row: int, verdict: str, cell=None) -> dict:
    return {"filename": f"/c/{path}", "project": path.split("/")[0], "code": "TL205", "cell": cell,
            "location": {"row": row}, "verify": {"verdict": verdict, "source": "your-code"}}


def test_wrong_verdicts_are_positive_on_false_and_negative_on_true(modules, capsys):
    _, scorer = modules
    findings = [_finding("p/a.py", 1, "confirmed"), _finding("p/a.py", 2, "not-reproduced"),
                _finding("p/a.py", 3, "skipped"), _finding("p/nb.ipynb", 5, "demonstrated", cell=2),
                _finding("p/a.py", 4, "not-applicable")]
    labels = {"p/a.py:1:TL205": False, "p/a.py:2:TL205": False, "p/a.py:3:TL205": True,
              "p/nb.ipynb:cell 2:5:TL205": True, "p/a.py:4:TL205": True}
    scorer.judge(findings, labels, Path("/c"))
    out = capsys.readouterr().out
    assert "triaged findings with a verdict: 5; wrong verdicts: 2" in out
    assert "p/a.py:1:TL205: finding false, verdict confirmed" in out
    assert "p/a.py:4:TL205: finding true, verdict not-applicable" in out
