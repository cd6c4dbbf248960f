"""The real-editor test of the language server (VS Code cannot be downloaded here): headless
Neovim opens a file, gets torchlint's diagnostics, applies the fix-all code action and stops
the server, which must exit 0. `.ci/run` installs Neovim when it is missing; without it the
test is skipped with the reason."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pygls")

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "tests" / "data" / "neovim_fix_all.lua"
NVIM = shutil.which("nvim")


@pytest.mark.skipif(NVIM is None, reason="Neovim is not installed (`apt-get install neovim`; .ci/run does it)")
def test_headless_neovim_shows_the_diagnostics_and_applies_fix_all(tmp_path):
    (tmp_path / "train.py").write_text('import torch\n\nwith torch.no_grad:\n    y = model(x)\nm = torch.load("ckpt.pt")\n')
    (tmp_path / "torchlint.toml").write_text('extend-select = ["TL601"]\n')  # TL601 is off by default
    out = tmp_path / "result.json"
    env = {**os.environ, "TL_ROOT": str(tmp_path), "TL_OUT": str(out), "TL_PYTHON": sys.executable,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
           "XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_DATA_HOME": str(tmp_path / "data"),
           "XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    subprocess.run([NVIM, "--headless", "--clean", "-n", "-c", f"luafile {SCRIPT}"], cwd=tmp_path, env=env,
                   timeout=300, check=False, stdin=subprocess.DEVNULL, capture_output=True)
    result = json.loads(out.read_text())
    assert result["error"] is None
    assert result["codes"] == ["TL108", "TL601"]
    # Fix-all applied the safe TL108 fix and left the unsafe TL601 one alone.
    assert result["lines"] == ["import torch", "", "with torch.no_grad():", "    y = model(x)", 'm = torch.load("ckpt.pt")']
    assert result["exit_code"] == 0
