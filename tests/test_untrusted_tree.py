"""What a checked tree without git (an unpacked sdist, a tarball, a PR's checkout) can still
do through its cache and config files (issue 16, points 4, 5 and 10): each test failed on
torchlint 0.2."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from conftest import cache_entry_files, read_cache_entries, write_cache_entries

from torchlint.records import Verdict

BAD = "import torch\nwith torch.no_grad():\n    loss = model(x)\n    loss.backward()\n"


def _cache(root: Path) -> Path:
    return root / ".torchlint_cache"


# -- point 5: cache entries the tree cannot forge ----------------------------------------

def test_a_shipped_cache_that_hides_a_finding_is_not_trusted(tmp_path, run_cli, monkeypatch):
    project = tmp_path / "sdist"
    project.mkdir()
    (project / "train.py").write_text(BAD)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "attacker-home"))
    assert run_cli("check", cwd=project)[0] == 1  # the attacker builds the cache on their machine
    entries = read_cache_entries(_cache(project))
    for entry in entries.values():
        entry["findings"] = []
    write_cache_entries(_cache(project), entries)  # the attacker's best forgery: under their own key
    assert run_cli("check", cwd=project)[0] == 0  # under the attacker's own key it is served

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "victim-home"))
    code, out, _ = run_cli("check", "--output-format", "json", cwd=project)
    assert code == 1 and "TL101" in out
    rewritten = read_cache_entries(_cache(project))["train.py"]
    assert rewritten["findings"] and rewritten["findings"][0]["code"] == "TL101"
    key = tmp_path / "victim-home" / "torchlint" / "key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and key.stat().st_size == 32


def test_a_key_inside_the_checked_tree_is_not_used(tmp_path, run_cli, monkeypatch):
    (tmp_path / "train.py").write_text(BAD)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / ".cache"))  # a key the tree could ship
    code, out, _ = run_cli("check", "--output-format", "json")
    assert code == 1 and "TL101" in out
    assert not cache_entry_files(_cache(tmp_path))  # no key we can trust: no cache at all


def test_a_verdict_cache_entry_from_the_tree_is_not_served(tmp_path, monkeypatch):
    from torchlint.verify.runner import VerdictCache

    cache = tmp_path / ".torchlint_cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path.parent / f"{tmp_path.name}-attacker"))
    VerdictCache(cache).put("k" * 64, Verdict("not-reproduced", "forged"))
    assert _verdict(VerdictCache(cache).get("k" * 64)) == ("not-reproduced", "forged")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path.parent / f"{tmp_path.name}-victim"))
    assert VerdictCache(cache).get("k" * 64) is None
    VerdictCache(cache).put("k" * 64, Verdict("confirmed", "ours"))  # rewritten
    assert _verdict(VerdictCache(cache).get("k" * 64)) == ("confirmed", "ours")


def _verdict(entry):
    """(verdict, evidence) of a cache entry; entries also carry the sandbox layers."""
    return None if entry is None else (entry.verdict, entry.evidence)


# -- point 10: cache directories reached through symlinks ----------------------------------

def test_a_symlinked_verdict_cache_directory_is_not_written_through(tmp_path):
    from torchlint.verify.runner import VerdictCache

    outside = tmp_path / "outside"
    outside.mkdir()
    project = tmp_path / "project"
    (project / ".torchlint_cache").mkdir(parents=True)
    (project / ".torchlint_cache" / "verify").symlink_to("../../outside")
    VerdictCache(project / ".torchlint_cache").put("k" * 64, Verdict("confirmed", "e"))
    assert list(outside.iterdir()) == []


def test_a_symlinked_lint_cache_directory_is_not_written_through(tmp_path, run_cli):
    from torchlint import __version__

    outside = tmp_path / "outside"
    outside.mkdir()
    project = tmp_path / "project"
    project.mkdir()
    (project / "train.py").write_text(BAD)
    (project / ".torchlint_cache").symlink_to("../outside")
    code, out, _ = run_cli("check", "--output-format", "json", cwd=project)
    assert code == 1 and "TL101" in out
    assert list(outside.iterdir()) == []
    (project / ".torchlint_cache").unlink()
    (project / ".torchlint_cache").mkdir()
    (project / ".torchlint_cache" / __version__).symlink_to("../../outside")
    assert run_cli("check", cwd=project)[0] == 1
    assert list(outside.iterdir()) == []


# -- point 4: a config file can only lower the security limits ----------------------------

@pytest.mark.parametrize("line, flag", [
    ("verify-memory = 7168", "--verify-memory"),  # 7 GiB
    ("verify-budget = 1e12", "--verify-budget"),
    ("verify-timeout = 1e12", "--verify-timeout"),
    ('max-file-size = "1000GB"', "--max-file-size"),
    ("max-file-size = 5242881", "--max-file-size"),  # one byte over the built-in 5 MiB
])
def test_a_config_file_cannot_raise_a_security_limit(tmp_path, run_cli, line, flag):
    (tmp_path / "train.py").write_text(BAD)
    (tmp_path / "pyproject.toml").write_text(f"[tool.torchlint]\n{line}\n")
    code, _, err = run_cli("check")
    assert code == 2, err
    assert "can only lower" in err and f"Pass {flag} on the command line" in err


def test_a_config_file_may_lower_the_limits_and_the_command_line_may_raise_them(tmp_path, run_cli):
    from torchlint.config import CliOverrides, ConfigResolver

    (tmp_path / "big.py").write_text("x = 1\n" * 1000)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.torchlint]\nmax-file-size = "1KB"\nverify-memory = 512\nverify-budget = 30\nverify-timeout = 5\n')
    settings = ConfigResolver(CliOverrides(), cwd=tmp_path).default
    assert (settings.max_file_size, settings.verify_memory, settings.verify_budget, settings.verify_timeout) \
        == (1000, 512, 30.0, 5.0)
    code, out, _ = run_cli("check", "--no-cache", "--output-format", "concise")
    assert code == 1 and "larger than max-file-size" in out
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\nmax-file-size = "1000GB"\nverify-memory = 8192\n')
    cli = CliOverrides(max_file_size="1000GB", verify_memory=8192, verify_timeout=600.0)
    settings = ConfigResolver(cli, cwd=tmp_path).default
    assert (settings.max_file_size, settings.verify_memory, settings.verify_timeout) == (10**12, 8192, 600.0)
    assert run_cli("check", "--no-cache", "--max-file-size", "1000GB", "--verify-memory", "8192")[0] == 0


def test_the_config_limits_are_the_runners_defaults():
    from torchlint import config
    from torchlint.verify import runner

    assert runner.DEFAULT_MEMORY == config.DEFAULT_VERIFY_MEMORY_MIB * 2**20
    assert runner.DEFAULT_BUDGET == config.DEFAULT_VERIFY_BUDGET


# -- point 10: a config file that links out of the tree -----------------------------------

def test_a_config_symlink_out_of_the_tree_is_not_read_nor_quoted(tmp_path, run_cli):
    secret = tmp_path / "runner-home" / "credentials.toml"
    secret.parent.mkdir()
    secret.write_text('select = "AKIA_SECRET_VALUE"\n')
    project = tmp_path / "project"
    project.mkdir()
    (project / "train.py").write_text(BAD)
    (project / ".torchlint.toml").symlink_to(secret)
    code, out, err = run_cli("check", cwd=project)
    assert code == 2 and "symlink" in err and "--config" in err
    assert "AKIA" not in out + err
    # A link within the tree is an ordinary config file.
    (project / ".torchlint.toml").unlink()
    (project / "conf").mkdir()
    (project / "conf" / "torchlint.toml").write_text('ignore = ["TL101"]\n')
    (project / ".torchlint.toml").symlink_to("conf/torchlint.toml")
    assert run_cli("check", cwd=project)[0] == 0
