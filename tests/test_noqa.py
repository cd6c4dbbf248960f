"""`# noqa` suppression, ruff-style."""

from __future__ import annotations

import json

from test_cli import write

SRC = """\
import torch

with torch.no_grad():
    loss = model(x).sum()
    loss.backward(){c1}
def forward(p: torch.Tensor):
    p.data -= 0.1 * p.grad{c2}
"""


def found(tmp_path, run_cli, c1="", c2="", header=""):
    write(tmp_path, "a.py", header + SRC.format(c1=c1, c2=c2))
    out = run_cli("check", "a.py", "--output-format", "json")[1]
    return sorted(f["code"] for f in json.loads(out))


def test_blanket_and_specific_noqa(tmp_path, run_cli):
    assert found(tmp_path, run_cli) == ["TL101", "TL102"]
    assert found(tmp_path, run_cli, c1="  # noqa") == ["TL102"]
    assert found(tmp_path, run_cli, c1="  # noqa: TL101") == ["TL102"]
    assert found(tmp_path, run_cli, c1="  # noqa: TL102") == ["TL101", "TL102"]  # wrong code: kept
    assert found(tmp_path, run_cli, c1="  # NOQA:TL101,E501", c2="  # noqa: E501, TL102") == []
    assert found(tmp_path, run_cli, c1="  # noqa: E501") == ["TL101", "TL102"]  # other tools' codes
    assert found(tmp_path, run_cli, c1="  # type: ignore  # noqa: TL101") == ["TL102"]


def test_noqa_inside_a_string_is_not_a_comment(tmp_path, run_cli):
    write(tmp_path, "a.py", 'import torch\nwith torch.no_grad():\n    loss = m(x)\n    loss.backward(); s = "# noqa"\n')
    out = run_cli("check", "a.py", "--output-format", "json")[1]
    assert [f["code"] for f in json.loads(out)] == ["TL101"]


def test_file_level_noqa(tmp_path, run_cli):
    assert found(tmp_path, run_cli, header="# torchlint: noqa\n") == []
    assert found(tmp_path, run_cli, header="# torchlint: noqa: TL102\n") == ["TL101"]
    assert found(tmp_path, run_cli, header="# Torchlint: NOQA: tl101, tl102\n") == []


def test_multiline_statement_uses_first_line(tmp_path, run_cli):
    write(tmp_path, "a.py", "import torch.nn.functional as F\n"
          "loss = F.cross_entropy(  # noqa: TL201\n    logits,\n    y.float(),\n)\n"
          "loss = F.cross_entropy(logits,\n    y.float())  # noqa: TL201\n")
    out = json.loads(run_cli("check", "a.py", "--output-format", "json")[1])
    assert [(f["location"]["row"], f["noqa_row"]) for f in out] == [(4, 4)]
