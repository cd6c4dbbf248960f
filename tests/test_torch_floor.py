"""TL601 and the torch floor: `--torch-version`, `torch-version`, and when both are unset,
the project's own `torch>=X.Y` requirement in pyproject.toml."""

from __future__ import annotations

import pytest

from torchlint.project_torch import floor_of

LOAD = "import torch\nstate = torch.load('ckpt.pt')\n"


@pytest.mark.parametrize("req, floor", [
    ("torch>=2.7", "2.7"), ("torch >= 2.6.0", "2.6"), ("torch==2.8.1", "2.8"), ("torch~=2.7", "2.7"),
    ("torch[opt]>=2.9,<3", "2.9"), ("torch>=2.7; sys_platform == 'linux'", "2.7"),
    ("torchvision>=0.20", None), ("torch-geometric>=2.6", None), ("torch", None), ("torch<3", None),
])
def test_floor_of(req, floor):
    assert floor_of(req) == floor


def _project(tmp_path, deps, extra=""):
    (tmp_path / "pyproject.toml").write_text(
        f'[project]\nname = "p"\ndependencies = {deps!r}\n{extra}'.replace("'", '"'))
    (tmp_path / "m.py").write_text(LOAD)


def test_project_floor_at_or_above_2_6_silences_tl601(tmp_path, run_cli):
    _project(tmp_path, ["numpy", "torch>=2.7"], "[tool.torchlint]\n")
    code, out, _ = run_cli("check", "--select", "TL601", "m.py")
    assert code == 0 and "TL601" not in out


def test_project_floor_below_2_6_keeps_tl601(tmp_path, run_cli):
    _project(tmp_path, ["torch>=2.4"], "[tool.torchlint]\n")
    code, out, _ = run_cli("check", "--select", "TL601", "m.py")
    assert code == 1 and "m.py:2:9: TL601" in out


def test_pyproject_without_torchlint_table_still_gives_the_floor(tmp_path, run_cli):
    _project(tmp_path, ["torch>=2.6"])
    code, out, _ = run_cli("check", "--select", "TL601", "m.py")
    assert code == 0, out


def test_explicit_setting_wins_over_the_requirement(tmp_path, run_cli):
    _project(tmp_path, ["torch>=2.7"], '[tool.torchlint]\ntorch-version = "2.4"\n')
    assert "TL601" in run_cli("check", "--select", "TL601", "m.py")[1]
    code, out, _ = run_cli("check", "--select", "TL601", "--torch-version", "2.7", "m.py")
    assert code == 0 and "TL601" not in out


def test_a_pyproject_linking_out_of_the_project_gives_no_floor(tmp_path):
    from torchlint.config import load_toml
    from torchlint.project_torch import project_torch_floor

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["torch>=2.7"]\n')
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").symlink_to(outside / "pyproject.toml")
    assert project_torch_floor(project, load_toml) is None
    assert project_torch_floor(outside, load_toml) == "2.7"


def test_setup_cfg_gives_the_floor_when_pyproject_has_none(tmp_path, run_cli):
    (tmp_path / "setup.cfg").write_text("[metadata]\nname = p\n[options]\ninstall_requires =\n"
                                        "    numpy\n    torch>=2.7\n")
    (tmp_path / "m.py").write_text(LOAD)
    assert run_cli("check", "--select", "TL601", "m.py")[0] == 0
    (tmp_path / "setup.cfg").write_text("[options]\ninstall_requires =\n    torch>=2.4\n")
    assert "m.py:2:9: TL601" in run_cli("check", "--select", "TL601", "--no-cache", "m.py")[1]


def test_requirements_txt_gives_the_floor_and_pyproject_comes_first(tmp_path):
    from torchlint.config import load_toml
    from torchlint.project_torch import project_torch_floor

    (tmp_path / "requirements-train.txt").write_text("-r base.txt\n# torch>=1.0 in a comment\ntorch>=2.8  # cpu\n")
    assert project_torch_floor(tmp_path, load_toml) == "2.8"
    (tmp_path / "setup.cfg").write_text("[options]\ninstall_requires = torch>=2.6\n")
    assert project_torch_floor(tmp_path, load_toml) == "2.6"
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\ndependencies = ["torch>=2.9"]\n')
    assert project_torch_floor(tmp_path, load_toml) == "2.9"


def test_a_requirements_file_linking_out_of_the_project_gives_no_floor(tmp_path):
    from torchlint.config import load_toml
    from torchlint.project_torch import project_torch_floor

    outside = tmp_path / "outside.txt"
    outside.write_text("torch>=2.7\n")
    project = tmp_path / "project"
    project.mkdir()
    (project / "requirements.txt").symlink_to(outside)
    (project / "setup.cfg").write_text("[options\nbroken")  # unreadable: no floor, no traceback
    assert project_torch_floor(project, load_toml) is None
