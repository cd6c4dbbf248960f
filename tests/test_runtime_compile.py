"""`torchlint run` on a `torch.compile(fullgraph=True)` program (issue 22, point 8): it runs
(dynamo once traced the monitors' hooks and failed), its losses are bit-identical to a plain
run, torch prints nothing more than it does plainly (no warning about our global hooks), and
the report says the compiled region ran unmonitored. One tiny model: inductor compiles C++ on
CPU (gcc), once; the second run finds it in inductor's cache."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

pytestmark = pytest.mark.torch

ROOT = Path(__file__).resolve().parent.parent

PROGRAM = '''
import torch
import torch.nn.functional as F

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
compiled = torch.compile(model, fullgraph=True)
x, y = torch.randn(16, 4), torch.randint(0, 3, (16,))
for step in range(3):
    opt.zero_grad()
    loss = F.cross_entropy(compiled(x), y)
    loss.backward()
    opt.step()
    print(repr(loss.item()))
'''


@pytest.mark.skipif(shutil.which("gcc") is None and shutil.which("cc") is None,
                    reason="torch.compile on CPU needs a C compiler")
def test_a_fullgraph_compiled_program_runs_unchanged_under_the_monitors(tmp_path):
    (tmp_path / "compiled.py").write_text(PROGRAM, encoding="utf-8")
    # One compile thread: no pool of compile workers (each a Python process importing torch).
    env = {**os.environ, "TORCHINDUCTOR_COMPILE_THREADS": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    plain = subprocess.run([sys.executable, "compiled.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=600)
    assert plain.returncode == 0, plain.stderr
    monitored = subprocess.run([sys.executable, "-m", "torchlint", "run", "--output-format", "json", "-o", "found.json",
                                "--", sys.executable, "compiled.py"], cwd=tmp_path, env=env, capture_output=True,
                               text=True, timeout=600)
    assert monitored.returncode == 0, monitored.stderr
    losses = plain.stdout.splitlines()
    assert len(losses) == 3 and monitored.stdout.splitlines() == losses  # repr: every digit
    # The program's stderr first, as plainly (no warning caused by the monitors), then torchlint's summary.
    assert monitored.stderr[:len(plain.stderr)] == plain.stderr
    ours = monitored.stderr[len(plain.stderr):]
    assert ours.startswith("torchlint run: `"), ours
    assert "after 3 optimizer step(s)" in ours
    assert ("note: torch.compile(`Sequential`, fullgraph=True) at compiled.py:8: the compiled region ran without the "
            "monitors") in ours
    assert (tmp_path / "found.json").read_text(encoding="utf-8").strip() == "[]"  # inductor's files are not linted
