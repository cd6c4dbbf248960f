"""`pip install "torchlint[verify]"` must not bring a torch of its own: it would be PyPI's
CUDA build on Linux (several GB and about 16 `nvidia-*` packages) in a fresh environment,
and would replace the CPU torch of an environment that has one. Checked on a wheel built
from this checkout: its metadata, pip's resolver (`--dry-run --report`) offline in this
environment (which has torch), and in a fresh one against the index; and `--verify`
without torch says how to get the CPU build."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from test_cli import BAD

REPO = Path(__file__).resolve().parent.parent
HEAVY = ("torch", "nvidia-", "triton")  # what a CUDA torch brings


def _pip(*args: str, cwd: Path, python: Path | None = None) -> subprocess.CompletedProcess:
    target = ["--python", str(python)] if python else []  # pip resolves for that interpreter
    return subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", *target, *args], cwd=cwd,
                          capture_output=True, text=True, timeout=600)


def _heavy(names: list[str]) -> list[str]:
    return [name for name in names if name == "torch" or name.startswith(HEAVY[1:])]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """A non-editable wheel of this checkout, built with the hatchling already installed
    (no build isolation, so no index is needed)."""
    out = tmp_path_factory.mktemp("wheel")
    proc = _pip("wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(REPO), cwd=out)
    if proc.returncode != 0 and "hatchling" in proc.stderr:
        pytest.skip("hatchling is not installed (pip install -e '.[dev]')")
    assert proc.returncode == 0, proc.stderr
    return next(out.glob("torchlint-*.whl"))


def _planned(wheel: Path, cwd: Path, *options: str, python: Path | None = None) -> list[str]:
    """Names of the distributions pip would install for `<wheel>[verify]`."""
    report = cwd / "report.json"
    proc = _pip("install", "--dry-run", "--quiet", "--report", str(report), *options, f"{wheel}[verify]", cwd=cwd,
                python=python)
    if proc.returncode != 0 and ("No matching distribution" in proc.stderr or "connection" in proc.stderr.lower()):
        pytest.skip(f"the dependencies cannot be resolved here: {proc.stderr.strip().splitlines()[-1]}")
    assert proc.returncode == 0, proc.stderr
    return [item["metadata"]["name"].lower() for item in json.loads(report.read_text())["install"]]


def test_the_wheels_verify_extra_requires_no_torch(wheel):
    with zipfile.ZipFile(wheel) as archive:
        metadata = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        lines = archive.read(metadata).decode().splitlines()
    requirements = [Requirement(line.split(":", 1)[1].strip()) for line in lines if line.startswith("Requires-Dist:")]
    verify = [r.name.lower() for r in requirements
              if r.marker is not None and "extra" in str(r.marker) and r.marker.evaluate({"extra": "verify"})]
    assert "numpy" in verify  # what --verify needs besides torch
    assert not _heavy(verify) and not _heavy([r.name.lower() for r in requirements])


def test_an_installed_cpu_torch_is_kept_and_nothing_is_downloaded(wheel, tmp_path):
    """Offline (`--no-index`): with torch and the extra's packages installed, as here, pip
    plans torchlint alone; an extra that wanted another torch would fail to resolve."""
    try:
        version = importlib.metadata.version("torch")  # the metadata, without importing torch
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("torch is not installed here")
    assert version
    assert _planned(wheel, tmp_path, "--no-index", "--find-links", str(wheel.parent)) == ["torchlint"]


@pytest.mark.network
def test_fresh_venv_gets_no_torch_and_no_nvidia_package(wheel, tmp_path):
    """The resolver against the index for an empty venv (made without pip: this
    environment's pip resolves for it through `--python`)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    planned = _planned(wheel, tmp_path, python=venv / "bin" / "python")
    assert "torchlint" in planned and "numpy" in planned
    assert not _heavy(planned), planned


def test_verify_without_torch_says_how_to_get_the_cpu_build(tmp_path, run_cli, monkeypatch):
    # `import torch` raises and importlib.util.find_spec("torch") is None, as without torch.
    monkeypatch.setitem(sys.modules, "torch", None)
    (tmp_path / "train.py").write_text(BAD)
    code, out, err = run_cli("check", "--verify", "--no-cache", "train.py", cwd=tmp_path)
    assert code == 2, out + err
    assert "CPU" in err and "wheel index" in err and "CUDA" in err
    assert "Traceback" not in err
