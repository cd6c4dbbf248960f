"""Monitors are invisible to warnings: torch's warnings name the program's line, pass the
program's filters and "once per location" registry, and `catch_warnings(record=True)` records
the same list with and without `torchlint run`."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from test_runtime_run import torchlint_run

pytest.importorskip("torch")

pytestmark = pytest.mark.torch

PROGRAM = textwrap.dedent("""
    import json
    import warnings

    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.utils.data import DataLoader, TensorDataset


    def helper():
        warnings.warn("the program's own warning", UserWarning, stacklevel=2)


    def train():
        model = nn.Sequential(nn.Linear(4, 1), nn.Dropout(0.1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        x, y = torch.randn(8, 4), torch.randn(8)
        for step in range(2):
            opt.zero_grad()
            loss = F.mse_loss(model(x), y)  # broadcasting UserWarning: (8, 1) against (8,)
            loss = loss + nn.MSELoss()(model(x), y)
            loss = loss + F.cross_entropy(torch.randn(8, 3), torch.randint(0, 3, (8,)), size_average=True)
            probabilities = F.softmax(torch.randn(2, 3))  # implicit dim
            loss.backward()
            opt.step()
            helper()
        for batch in DataLoader(TensorDataset(x), batch_size=4):
            pass


    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        train()
    print(json.dumps([[w.category.__name__, w.filename, w.lineno, str(w.message)[:60]] for w in caught], indent=1))
    train()  # default filters: each warning once per location, on stderr
""")


def test_warnings_are_the_same_with_and_without_monitors(tmp_path):
    script = tmp_path / "warns.py"
    script.write_text(PROGRAM, encoding="utf-8")
    plain = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert plain.returncode == 0, plain.stderr
    row = next(i for i, line in enumerate(PROGRAM.splitlines(), 1) if "# broadcasting" in line)
    assert f'"{script}",\n  {row},' in plain.stdout  # the mse_loss line: the test is about something
    monitored = torchlint_run("--", sys.executable, str(script), cwd=tmp_path)
    # Exit 1: findings, TL423 among them (the broadcast the program makes to get torch's warning).
    assert monitored.returncode == 1 and "TL423" in monitored.stderr, monitored.stderr
    assert monitored.stdout == plain.stdout
    assert "torchlint/runtime/" not in monitored.stdout + monitored.stderr  # no monitor file named
    assert monitored.stderr.startswith(plain.stderr)  # the same warnings, once each, then the report
