"""The installed (non-editable) wheel carries the rule docs; the pre-commit hook works."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def test_wheel_ships_rule_docs(tmp_path):
    built = os.environ.get("TORCHLINT_TEST_DIST")  # .ci/run built and twine-checked it: reuse it
    dist = Path(built) if built else tmp_path / "dist"
    if not built:
        pytest.importorskip("hatchling")
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                        "-w", str(dist), str(REPO)], check=True)
    wheel = next(dist.glob("torchlint-*.whl"))
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target),
                    str(wheel)], check=True)
    env = {**os.environ, "PYTHONPATH": str(target)}
    proc = subprocess.run([sys.executable, "-c", "import torchlint, sys; print(torchlint.__file__)"],
                          capture_output=True, text=True, env=env, cwd=tmp_path)
    assert proc.stdout.strip().startswith(str(target)), proc.stdout  # not the checkout
    proc = subprocess.run([sys.executable, "-m", "torchlint", "rule", "TL301"], capture_output=True,
                          text=True, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("# TL301 worker-rng-duplication")
    assert (target / "torchlint" / "rules_docs" / "TL301-worker-rng-duplication.md").is_file()
    # TL901's table is data, not code: it must ship too, and the installed rule must read it.
    assert (target / "torchlint" / "data" / "deprecated_api.toml").is_file()
    # So is the --verify pre-filter's closure: without it every slice is refused.
    assert (target / "torchlint" / "verify" / "reachable.json").is_file()
    probe = tmp_path / "probe.py"
    probe.write_text("import torch\nx = torch.solve(b, A)\n")
    proc = subprocess.run([sys.executable, "-m", "torchlint", "check", "--isolated", "--no-cache", "--select",
                           "TL901", str(probe)], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert proc.returncode == 1 and "torch.linalg.solve" in proc.stdout, proc.stdout + proc.stderr
    # `torchlint run` puts this directory first on the program's PYTHONPATH.
    assert (target / "torchlint" / "runtime" / "boot" / "sitecustomize.py").is_file()
    assert (target / "torchlint" / "rules_docs" / "TL320-identical-worker-random-streams.md").is_file()


@pytest.mark.network
def test_pre_commit_hook(tmp_path):
    if shutil.which("pre-commit") is None and subprocess.run(
            [sys.executable, "-m", "pre_commit", "--version"], capture_output=True).returncode != 0:
        pytest.skip("pre-commit is not installed")
    repo = tmp_path / "user-repo"
    repo.mkdir()
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    (repo / "bad.py").write_text("import torch\nwith torch.no_grad():\n    loss = m(x)\n    loss.backward()\n")
    (repo / "clean.py").write_text("import torch\nx = torch.zeros(3)\n")
    subprocess.run([*git, "add", "."], cwd=repo, check=True)
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pc-home")}
    run = lambda *files: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "pre_commit", "try-repo", str(REPO), "torchlint", "--files", *files],
        cwd=repo, capture_output=True, text=True, env=env, timeout=900)
    bad = run("bad.py", "clean.py")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "bad.py:4:5: TL101" in bad.stdout
    good = run("clean.py")
    assert good.returncode == 0, good.stdout + good.stderr
