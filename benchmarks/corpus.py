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
# Libraries with training loops, data loading and DDP code (model zoos have little of it):
# `corpus_report.py --extra` adds them so loop rules meet real code too.
EXTRA_CORPORA = {
    "d2l": ("d2l==1.0.3", "d2l"),
    "skorch": ("skorch==1.4.0", "skorch"),
    "pytorch-ignite": ("pytorch-ignite==0.5.5", "ignite"),
    "ultralytics": ("ultralytics==8.4.190", "ultralytics"),
}


def corpus_path(name: str) -> Path:
    """Download and unpack `name` if needed; return the directory to lint."""
    requirement, subdir = {**CORPORA, **EXTRA_CORPORA}[name]
    dist, version = requirement.split("==")
    target = CACHE / f"{dist}-{version}"
    if not (target / subdir).is_dir():
        wheels = CACHE / "wheels"
        wheels.mkdir(parents=True, exist_ok=True)
        pattern = f"{dist.replace('-', '_')}-{version}-*.whl"  # wheel names normalise '-' to '_'
        found = list(wheels.glob(pattern))
        if not found:
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                            "-q", "-d", str(wheels), requirement], check=True)
            found = list(wheels.glob(pattern))
        with zipfile.ZipFile(found[0]) as zf:
            zf.extractall(target)
    return target / subdir


def python_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.py"))
