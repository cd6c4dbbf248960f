"""`pip install "torchlint[verify]"` must not bring a torch of its own: it would be PyPI's
CUDA build on Linux (several GB and about 16 `nvidia-*` packages) in a fresh environment,
and would replace the CPU torch of an environment that has one. Checked with pip's resolver
(`--dry-run --report`) on a wheel built from this checkout; and `--verify` without torch
says how to get the CPU build."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from test_cli import BAD

REPO = Path(__file__).resolve().parent.parent


def _pip(python: Path | str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(python), "-m", "pip", "--disable-pip-version-check", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """A non-editable wheel of this checkout, built with the hatchling already installed
    (no build isolation, so no index is needed)."""
    out = tmp_path_factory.mktemp("wheel")
    proc = _pip(sys.executable, "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(REPO), cwd=out)
    if proc.returncode != 0 and "hatchling" in proc.stderr:
        pytest.skip("hatchling is not installed (pip install -e '.[dev]')")
    assert proc.returncode == 0, proc.stderr
    return next(out.glob("torchlint-*.whl"))


def _planned(python: Path | str, wheel: Path, cwd: Path) -> list[str]:
    """Names of the distributions pip would install for `<wheel>[verify]`."""
    report = cwd / "report.json"
    proc = _pip(python, "install", "--dry-run", "--quiet", "--report", str(report), f"{wheel}[verify]", cwd=cwd)
    if proc.returncode != 0 and ("No matching distribution" in proc.stderr or "connection" in proc.stderr.lower()):
        pytest.skip(f"the dependencies cannot be resolved here: {proc.stderr.strip().splitlines()[-1]}")
    assert proc.returncode == 0, proc.stderr
    return [item["metadata"]["name"].lower() for item in json.loads(report.read_text())["install"]]


def test_fresh_venv_gets_no_torch_and_no_nvidia_package(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    planned = _planned(venv / "bin" / "python", wheel, tmp_path)
    assert "torchlint" in planned and "numpy" in planned  # what --verify needs besides torch
    assert "torch" not in planned
    assert not [name for name in planned if name.startswith(("nvidia-", "triton"))]


def test_an_installed_cpu_torch_is_kept(wheel, tmp_path):
    try:
        import torch
    except ImportError:
        pytest.skip("torch is not installed here")
    assert torch.__version__  # the environment's own torch, whatever build it is
    planned = _planned(sys.executable, wheel, tmp_path)
    assert "torch" not in planned and not [name for name in planned if name.startswith("nvidia-")]


def test_verify_without_torch_says_how_to_get_the_cpu_build(tmp_path, run_cli, monkeypatch):
    # `import torch` raises and importlib.util.find_spec("torch") is None, as without torch.
    monkeypatch.setitem(sys.modules, "torch", None)
    (tmp_path / "train.py").write_text(BAD)
    code, out, err = run_cli("check", "--verify", "--no-cache", "train.py", cwd=tmp_path)
    assert code == 2, out + err
    assert "CPU" in err and "wheel index" in err and "CUDA" in err
    assert "Traceback" not in err
