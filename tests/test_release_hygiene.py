"""What a new user copies from the README works: the pre-commit snippet, the licence, the
CPU-torch advice, the ruff note."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text(encoding="utf-8")


def _yaml_blocks() -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", README, re.DOTALL)


def test_license_is_mit_and_matches_the_metadata():
    text = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License")
    assert "Permission is hereby granted, free of charge" in text
    assert 'license = { text = "MIT" }' in (REPO / "pyproject.toml").read_text(encoding="utf-8")


def test_readme_pre_commit_snippet_is_a_local_hook_matching_the_shipped_hook():
    [snippet] = [b for b in _yaml_blocks() if "repos:" in b]
    [repo] = yaml.safe_load(snippet)["repos"]
    assert repo["repo"] == "local"  # no release exists to point at
    [hook] = repo["hooks"]
    [shipped] = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    assert hook["entry"] == shipped["entry"] and hook["types_or"] == shipped["types_or"]
    assert "jupyter" in hook["types_or"]


def test_readme_pre_commit_snippet_runs(tmp_path):
    pytest.importorskip("pre_commit")
    [snippet] = [b for b in _yaml_blocks() if "repos:" in b]
    repo = tmp_path / "user-repo"
    repo.mkdir()
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    (repo / ".pre-commit-config.yaml").write_text(snippet)
    (repo / "bad.py").write_text("import torch\nwith torch.no_grad():\n    loss = m(x)\n    loss.backward()\n")
    (repo / "clean.py").write_text("import torch\nx = torch.zeros(3)\n")
    (repo / "nb.ipynb").write_bytes((REPO / "tests" / "fixtures" / "notebooks" / "positive.ipynb").read_bytes())
    subprocess.run([*git, "add", "."], cwd=repo, check=True)
    # `language: system` runs the `torchlint` next to this interpreter (the one under test).
    bin_dir = Path(sys.executable).parent
    if not (bin_dir / "torchlint").exists():
        pytest.skip("no torchlint console script next to this interpreter")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pc-home"),
           "PATH": os.pathsep.join([str(bin_dir), os.environ.get("PATH", "")])}
    run = lambda *files: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "pre_commit", "run", "--files", *files], cwd=repo,
        capture_output=True, text=True, env=env, timeout=300)
    bad = run("bad.py", "clean.py")
    assert bad.returncode == 1 and "bad.py:4:5: TL101" in bad.stdout, bad.stdout + bad.stderr
    notebook = run("nb.ipynb")  # types_or includes jupyter
    assert notebook.returncode == 1 and "nb.ipynb:cell 4:3:5: TL101" in notebook.stdout, notebook.stdout
    good = run("clean.py")
    assert good.returncode == 0, good.stdout + good.stderr


def test_cpu_torch_advice_is_honest():
    assert "CPU wheel index" in README
    assert "a plain `pip install torch`" in README
    from torchlint.verify import runner

    source = Path(runner.__file__).read_text(encoding="utf-8")
    message = re.search(r'raise VerifyUnavailable\(\s*((?:"[^"\n]*(?:\\"[^"\n]*)*"\s*)+)\)', source)
    assert message, "the missing-torch message moved"
    text = message.group(1)
    assert "CPU wheel index" in text and "CUDA build" in text
    assert "torch==2.13.0` for the CPU build" not in text
    assert not re.search(r"https?://|download\.pytorch|pytorch\.org", text)  # no host in code


def test_ruff_external_note():
    assert 'external = ["TL"]' in README and "RUF100" in README
