"""benchmarks/triage_packets.py and the held-out corpus pins of benchmarks/training_corpus.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest



@pytest.fixture(scope="module")
def modules(benchmark_scripts):
    return benchmark_scripts("training_corpus", "triage_packets")


def _rows(block: str) -> list[tuple[bool, int]]:
    """(marked, row) for each numbered line of an excerpt."""
    return [(m.group(1) == ">>", int(m.group(2))) for m in re.finditer(r"^(>>|  ) +(\d+) \|", block, re.M)]


def test_excerpt_is_the_enclosing_function_with_the_row_marked(modules):
    _, tp = modules
    lines = ["import torch", "", "@decorator", "def train(model):", "    x = 1", "    p.data.zero_()",
             "    return x", "", "y = 2"]
    rows = _rows(tp.excerpt(lines, 6, 6, 80))
    assert [r for _, r in rows] == [3, 4, 5, 6, 7]  # decorator to last line, nothing of the module
    assert [r for marked, r in rows if marked] == [6]


def test_excerpt_of_a_long_function_is_a_window_around_the_row(modules):
    _, tp = modules
    lines = ["def f():", *[f"    x{i} = {i}" for i in range(300)]]
    rows = _rows(tp.excerpt(lines, 200, 201, 80))
    numbers = [r for _, r in rows]
    assert len(numbers) == 80 and numbers[0] <= 200 <= numbers[-1]
    assert [r for marked, r in rows if marked] == [200, 201]


def test_excerpt_at_module_level_is_25_lines_either_side(modules):
    _, tp = modules
    lines = [f"x{i} = {i}" for i in range(100)]
    numbers = [r for _, r in _rows(tp.excerpt(lines, 50, 50, 80))]
    assert numbers == list(range(25, 76))


def test_choose_keeps_all_that_fit_and_samples_the_rest_reproducibly(modules):
    _, tp = modules
    findings = [{"filename": f"f{i}.py", "location": {"row": 1, "column": 0}} for i in range(50)]
    assert tp.choose(findings, 100, 18, "TL102") == sorted(findings, key=tp._order)
    first, again = tp.choose(findings, 20, 18, "TL801"), tp.choose(findings, 20, 18, "TL801")
    assert len(first) == 20 and first == again
    assert first != tp.choose(findings, 20, 19, "TL801")


def _finding(code: str, filename: Path, row: int, cell: int | None = None) -> dict:
    return {"code": code, "name": "n-" + code, "message": f"message of {code}", "filename": str(filename),
            "cell": cell, "location": {"row": row, "column": 0}, "end_location": {"row": row, "column": 3}}


def test_write_packets_from_a_report(modules, tmp_path):
    _, tp = modules
    root = tmp_path / "corpus"
    (root / "proj").mkdir(parents=True)
    script = root / "proj" / "train.py"
    script.write_text("def step(p):\n    p.data.zero_()\n")
    notebook = root / "proj" / "nb.ipynb"
    notebook.write_text(json.dumps({"cells": [
        {"cell_type": "markdown", "source": ["# title"]},
        {"cell_type": "code", "source": ["%time x = 1\n", "for p in ps:\n", "    p.data.zero_()\n"]}]}))
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "TL103-missing-zero-grad.md").write_text("# TL103 missing-zero-grad\nThe doc.\n")
    json_dir = tmp_path / "json"
    json_dir.mkdir()
    found = [_finding("TL103", script, 2), _finding("TL103", notebook, 3, cell=2)]
    found_all = [*found, *(_finding("TL802", script, 1) for _ in range(30))]
    (json_dir / "findings-default.json").write_text(json.dumps(found))
    (json_dir / "findings-ALL.json").write_text(json.dumps(found_all))
    (json_dir / "report.json").write_text(json.dumps({
        "set": "test", "root": str(root), "notebooks": "native", "not_linted": [], "unreadable": [],
        "timing": {"default": {"wall_s": 1, "cpu_s": 1}, "ALL": {"wall_s": 2, "cpu_s": 2}},
        "projects": [{"name": "proj", "source": "github:o/p@c", "category": "rl", "subdirs": [], "files": 2}]}))
    out = tmp_path / "packets"
    tp.write_packets(json_dir, out, docs, 18, 100, 20, 80)

    packet = (out / "TL103.md").read_text()
    assert "The doc." in packet and "**true** only if" in packet
    assert "### 1. proj/nb.ipynb:cell 2:3 message of TL103" in packet  # the cell's own source
    assert ">> 3 |     p.data.zero_()" in packet
    assert "### 2. proj/train.py:2 message of TL103" in packet
    assert packet.count("### ") == 2
    assert (out / "TL802.md").read_text().count("### ") == 20  # off by default: a sample of 20
    index = (out / "INDEX.md").read_text()
    assert "| [TL103](TL103.md) | n-TL103 | yes (all) | 2 | 2 | 2 | proj 2 |" in index
    assert "| [TL802](TL802.md) | n-TL802 | no | 0 | 30 | 20 | proj 30 |" in index


def test_heldout_set_is_new_code(modules):
    tc, _ = modules
    projects, notebooks = tc.SETS["heldout-2026-12"]
    assert notebooks == "native" and len(projects) >= 40
    assert len({p.name for p in projects}) == len(projects)
    old = {p.source.repo.lower() for p in tc.PROJECTS if isinstance(p.source, tc.GitHubSource)}
    # corpus.py's wheels and the old set's PyPI projects, by their GitHub names
    tuned_on = old | {"huggingface/transformers", "huggingface/pytorch-image-models", "pytorch/vision",
                      "d2l-ai/d2l-en", "skorch-dev/skorch", "pytorch/ignite", "ultralytics/ultralytics",
                      "pytorch/torchtune", "open-mmlab/mmengine", "facebookresearch/fairseq"}
    for p in projects:
        assert isinstance(p.source, tc.GitHubSource) and re.fullmatch(r"[0-9a-f]{40}", p.source.commit)
        assert p.source.repo.lower() not in tuned_on and p.category
    assert tc.SETS["issue9"] == (tc.PROJECTS, "converted")


def test_ddp_set_is_new_ddp_code(modules):
    tc, _ = modules
    projects, notebooks = tc.SETS["ddp-2026-12"]
    assert notebooks == "native" and 20 <= len(projects) <= 30
    assert len({p.name for p in projects}) == len(projects)
    assert len({p.source.repo.lower() for p in projects}) == len(projects)
    # No project of another set, under either name (the set's name or the GitHub repository).
    others = tc.PROJECTS + tc.SETS["heldout-2026-12"][0]
    taken = {p.source.repo.lower() for p in others if isinstance(p.source, tc.GitHubSource)}
    for p in projects:
        assert isinstance(p.source, tc.GitHubSource) and re.fullmatch(r"[0-9a-f]{40}", p.source.commit)
        assert p.source.repo.lower() not in taken and p.category == "ddp"
    assert not {p.name for p in projects} & {p.name for p in others}
