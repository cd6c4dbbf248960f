"""The in-process API tests (tests/runtime_api_cases.py: a clean step, bit-identical results,
clean uninstall), run in a child pytest so the torch state a training step leaves behind stays
out of this process. The checks' own API programs are fixtures (test_runtime_fixtures.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

pytestmark = pytest.mark.torch

ROOT = Path(__file__).resolve().parent.parent


def test_runtime_api_cases():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA",
                             str(ROOT / "tests" / "runtime_api_cases.py")],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert " passed" in result.stdout and " failed" not in result.stdout, result.stdout[-3000:]
    passed = [line for line in result.stdout.splitlines() if line.startswith("PASSED ")]
    assert len(passed) >= 5, result.stdout[-3000:]  # every case ran, none was skipped
