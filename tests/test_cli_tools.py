"""`torchlint clean`, `check --show-settings` and click's shell completion, as in ruff."""

from __future__ import annotations

import os

import pytest
from click.testing import CliRunner

from test_cli import BAD, write
from torchlint.cli import main


def test_show_settings_prints_what_the_config_resolves_to_and_lints_nothing(tmp_path, run_cli):
    write(tmp_path, "pyproject.toml", '[tool.torchlint]\nextend-select = ["TL601"]\n'
          '[tool.torchlint.per-file-ignores]\n"tests/*" = ["TL1"]\n')
    write(tmp_path, "train.py", BAD)
    code, out, err = run_cli("check", "--show-settings", "--ignore", "TL501", "train.py")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == 'Resolved settings for: "train.py"'
    assert lines[1] == f'Settings path: "{tmp_path / "pyproject.toml"}"'
    enabled = next(line for line in lines if line.startswith("enabled = "))
    assert '"TL601"' in enabled and '"TL101"' in enabled and '"TL501"' not in enabled  # config and flags
    assert 'per_file_ignores = {"tests/*": ["TL1' in out
    assert "TL101 " not in out  # nothing was linted
    code, out, _ = run_cli("check", "--show-settings", "--isolated")
    enabled = next(line for line in out.splitlines() if line.startswith("enabled = "))
    assert code == 0 and "Settings path: (none: the defaults)" in out and '"TL601"' not in enabled


def test_show_settings_with_a_broken_config_exits_2_with_the_reason(tmp_path, run_cli):
    write(tmp_path, "torchlint.toml", "select = 3\n")
    code, _, err = run_cli("check", "--show-settings")
    assert code == 2 and "select" in err and "Traceback" not in err


def test_clean_removes_torchlints_caches_and_nothing_else(tmp_path, run_cli):
    write(tmp_path, "a.py", BAD)
    write(tmp_path, "sub/torchlint.toml", 'cache-dir = "build/tl"\n')
    write(tmp_path, "sub/b.py", BAD)
    run_cli("check", "a.py")
    run_cli("check", "b.py", cwd=tmp_path / "sub")
    assert (tmp_path / ".torchlint_cache").is_dir() and (tmp_path / "sub" / "build" / "tl").is_dir()
    write(tmp_path, "keep/.torchlint_cache/data.txt", "not torchlint's")  # no marker: left alone
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    write(outside, ".torchlint_cache/.gitignore", "# Automatically created by torchlint.\n*\n")  # torchlint's, elsewhere
    os.symlink(outside / ".torchlint_cache", tmp_path / "sub" / ".torchlint_cache")  # a link: not removed
    (tmp_path / "deep").mkdir()
    os.symlink(outside, tmp_path / "deep" / "link")  # not followed
    # A config's cache-dir is removed when clean runs where that config applies.
    code, out, _ = run_cli("clean")
    assert code == 0 and out.splitlines() == ["Removing cache at: .torchlint_cache"]
    code, out, _ = run_cli("clean", cwd=tmp_path / "sub")
    assert code == 0 and out.splitlines() == ["Removing cache at: build/tl"]
    assert not (tmp_path / ".torchlint_cache").exists() and not (tmp_path / "sub" / "build" / "tl").exists()
    assert (tmp_path / "keep" / ".torchlint_cache" / "data.txt").is_file() and (outside / ".torchlint_cache").is_dir()
    assert run_cli("clean")[1] == "No cache found.\n"


def _complete(monkeypatch, words: str) -> list[str]:
    result = CliRunner().invoke(main, [], prog_name="torchlint", env={
        "_TORCHLINT_COMPLETE": "bash_complete", "COMP_WORDS": words, "COMP_CWORD": str(len(words.split()) - 1)})
    return [line.split(",", 1)[1] for line in result.output.splitlines()]


def test_shell_completion_is_clicks():
    script = CliRunner().invoke(main, [], prog_name="torchlint", env={"_TORCHLINT_COMPLETE": "bash_source"})
    assert "complete -o nosort -F _torchlint_completion torchlint" in script.output


@pytest.mark.parametrize(("words", "expected"), [
    ("torchlint cl", ["clean"]),
    ("torchlint check --show-se", ["--show-settings"]),
    ("torchlint check --output-format json", ["json", "json-lines"]),
])
def test_shell_completion_completes_commands_options_and_choices(monkeypatch, words, expected):
    assert _complete(monkeypatch, words) == expected


def test_the_cache_dir_name_is_the_caches():
    from torchlint import cache, cli_tools

    assert cli_tools.CACHE_DIR_NAME == cache.CACHE_DIR_NAME
