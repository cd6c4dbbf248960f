"""Pinned corpora of real PyTorch code, downloaded as wheels and unpacked once into
benchmarks/.corpus/ (git-ignored). Shared by corpus_report.py and speed.py."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".corpus"

# name -> (pip requirement, subdirectory of the unpacked wheel to lint)
CORPORA = {
    "transformers-models": ("transformers==4.46.3", "transformers/models"),
    "timm": ("timm==1.0.11", "timm"),
    "torchvision": ("torchvision==0.28.0", "torchvision"),
}


def corpus_path(name: str) -> Path:
    """Download and unpack `name` if needed; return the directory to lint."""
    requirement, subdir = CORPORA[name]
    dist, version = requirement.split("==")
    target = CACHE / f"{dist}-{version}"
    if not (target / subdir).is_dir():
        wheels = CACHE / "wheels"
        wheels.mkdir(parents=True, exist_ok=True)
        found = list(wheels.glob(f"{dist}-{version}-*.whl"))
        if not found:
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                            "-q", "-d", str(wheels), requirement], check=True)
            found = list(wheels.glob(f"{dist}-{version}-*.whl"))
        with zipfile.ZipFile(found[0]) as zf:
            zf.extractall(target)
    return target / subdir


def python_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.py"))
