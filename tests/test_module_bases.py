"""The framework-module table and its config key `module-bases`."""

from __future__ import annotations

SOURCE = """\
import torch
from mypkg.layers import Base


class Net(Base):
    def __init__(self):
        super().__init__()
        self.mask = torch.ones(4)

    def forward(self, x):
        return x * self.mask
"""


def test_module_bases_extends_the_table(tmp_path, run_cli):
    (tmp_path / "m.py").write_text(SOURCE)
    (tmp_path / "pyproject.toml").write_text("[tool.torchlint]\n")
    assert run_cli("check", "--select", "TL206", "m.py")[0] == 0  # Base is unknown: not a Module
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\nmodule-bases = ["mypkg.layers.Base"]\n')
    code, out, _ = run_cli("check", "--select", "TL206", "m.py")
    assert code == 1 and "m.py:8:9: TL206" in out


def test_module_bases_must_be_a_list_of_strings(tmp_path, run_cli):
    (tmp_path / "m.py").write_text(SOURCE)
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\nmodule-bases = "mypkg.layers.Base"\n')
    code, _, err = run_cli("check", "m.py")
    assert code == 2 and "module-bases" in err
