"""`--verify` never aborts a run: planning (slicing) every finding of every rule fixture and
notebook fixture raises nothing, a failure there is that finding's `error` verdict, and a
notebook finding is sliced from its code cells, so it gets the verdict the same code gets
in a .py file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torchlint.checker import check_file
from torchlint.diagnostics import Finding
from torchlint.notebook import lint_notebook
from torchlint import catalog
from torchlint.verify import runner

FIXTURES = Path(__file__).parent / "fixtures"
SOURCES = sorted(p for p in FIXTURES.rglob("*") if p.suffix in (".py", ".ipynb"))


def _findings(path: Path) -> list[Finding]:
    data = path.read_bytes()
    found = lint_notebook(str(path), data, catalog.static_rules()) if path.suffix == ".ipynb" else \
        check_file(str(path), data, catalog.static_rules()).findings
    return [f for f in found if f.code != "TL000"]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_every_fixture_finding_can_be_planned(path):
    text = path.read_text(encoding="utf-8")
    for finding in _findings(path):
        request, reason, failed = runner._plan_safely(finding, text)
        assert not failed, (finding, reason)
        assert request is not None or reason, finding


def test_a_slicing_bug_is_one_findings_error_and_the_rest_is_verified(monkeypatch, tmp_path):
    real_plan = runner.plan

    def broken(finding, source):
        if finding.path == "a.py":
            raise KeyError(140614042556432)  # what the slicer once raised
        return real_plan(finding, source)

    monkeypatch.setattr(runner, "plan", broken)
    text = "import torch\nt = torch.FloatTensor(3)\n"  # one finding, confirmed by running its slice
    a, b = (check_file(p, text.encode(), catalog.static_rules()).findings[0] for p in ("a.py", "b.py"))
    runner.verify_findings([a, b], device="cpu", timeout=60, sources={"a.py": text, "b.py": text}.get,
                           cache_dir=tmp_path)
    assert a.verify["verdict"] == "error" and "KeyError" in a.verify["runs"][0]["evidence"], a.verify
    assert b.verify["verdict"] == "confirmed", b.verify


def _notebook(cells: list[str]) -> str:
    return json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "source": c, "outputs": [],
                                  "execution_count": None} for c in cells],
                       "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5})


CELLS = ["import torch\nimport torch.nn.functional as F\n%matplotlib inline\n",
         "logits = torch.randn(4, 3)\nlabels = torch.randint(0, 3, (4,))\n",
         "!nvidia-smi\nloss = F.cross_entropy(logits, labels.float())\nt = torch.FloatTensor(3)\n"]


# The same, with an import no slice may use: both run as their programs (verify/program.py).
PROGRAM_CELLS = ["import collections\n" + CELLS[0], CELLS[1].replace("(4,))", "(collections.Counter('ab')['a'] * 4,))"),
                 CELLS[2]]


@pytest.mark.torch
def test_a_notebook_finding_gets_the_verdict_of_the_same_code_in_a_file(tmp_path):
    pytest.importorskip("torch")
    pairs = []
    for name, cells in (("train", CELLS), ("program", PROGRAM_CELLS)):
        notebook = tmp_path / f"{name}.ipynb"
        notebook.write_text(_notebook(cells))
        script = tmp_path / f"{name}.py"
        script.write_text("".join(c.replace("%matplotlib inline\n", "").replace("!nvidia-smi\n", "") for c in cells))
        pairs.append((notebook, script, _findings(notebook), _findings(script)))
    for _, _, cell_findings, file_findings in pairs:
        assert sorted(f.code for f in cell_findings) == sorted(f.code for f in file_findings)
        assert len(cell_findings) == 2  # a float cast of class-index labels, a legacy constructor
    # A notebook in a folder with no .py file: the project's snapshot has no such folder.
    (tmp_path / "notebooks").mkdir()
    alone = tmp_path / "notebooks" / "alone.ipynb"
    alone.write_text(_notebook(PROGRAM_CELLS))
    alone_findings = _findings(alone)
    texts = {str(p): p.read_text() for pair in pairs for p in pair[:2]} | {str(alone): alone.read_text()}
    # One run for all: the project (tmp_path) is what the programs run from.
    runner.verify_findings([f for pair in pairs for f in pair[2] + pair[3]] + alone_findings, device="cpu",
                           timeout=60, sources=texts.get, cache_dir=tmp_path / "cache", project=str(tmp_path))
    assert {f.code: f.verify["verdict"] for f in alone_findings} == {"TL201": "confirmed", "TL205": "confirmed"}, \
        [f.verify for f in alone_findings]
    for notebook, _, cell_findings, file_findings in pairs:
        for in_cell, in_file in zip(sorted(cell_findings, key=lambda f: f.code),
                                    sorted(file_findings, key=lambda f: f.code)):
            assert in_cell.cell == 3
            assert in_cell.verify["verdict"] == in_file.verify["verdict"] == "confirmed", (in_cell.verify,
                                                                                         in_file.verify)
            evidence = in_cell.verify["runs"][0]["evidence"]
            assert "not run" not in evidence, in_cell.verify
            assert in_cell.verify["source"] == in_file.verify["source"] == "your-code"
            # The labels need `collections`, which no slice may import: the program ran the loss.
            ran_as_program = evidence.startswith(f"ran {notebook.name} as its program")
            assert ran_as_program == (notebook.stem == "program" and in_cell.code == "TL201"), evidence
            if ran_as_program:
                assert in_file.verify["runs"][0]["evidence"].startswith("ran program.py as its program")
