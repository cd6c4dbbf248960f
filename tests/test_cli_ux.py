"""Terminal behaviour: colour, --no-fix, missing paths, empty directories, --help."""

from __future__ import annotations

import json

import pytest

from test_cli import BAD, write
from torchlint.output.color import use_color

ESC = "\x1b["


class _Tty:
    def __init__(self, tty: bool) -> None:
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@pytest.mark.parametrize(("choice", "env", "tty", "expected"), [
    ("auto", {}, True, True),
    ("auto", {}, False, False),
    ("auto", {"NO_COLOR": "1"}, True, False),
    ("auto", {"NO_COLOR": ""}, True, True),  # empty means unset (no-color.org)
    ("auto", {"FORCE_COLOR": "1"}, False, True),
    ("auto", {"TERM": "dumb"}, True, False),
    ("always", {"NO_COLOR": "1"}, False, True),
    ("never", {"FORCE_COLOR": "1"}, True, False),
])
def test_colour_decision(choice, env, tty, expected):
    assert use_color(choice, _Tty(tty), env) is expected


def test_colour_on_request_and_not_by_default_in_a_pipe(tmp_path, run_cli, monkeypatch):
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)
    write(tmp_path, "bad.py", BAD)
    out = run_cli("check", "bad.py", "--color", "always")[1]
    assert ESC in out and "TL101" in out
    assert ESC not in run_cli("check", "bad.py")[1]
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert ESC in run_cli("check", "bad.py", "--output-format", "concise")[1]
    assert ESC not in run_cli("check", "bad.py", "--output-format", "json")[1]  # never in machine formats
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.delenv("FORCE_COLOR")
    assert ESC not in run_cli("check", "bad.py")[1]


def test_bad_colour_value_exits_2(tmp_path, run_cli):
    code, _, err = run_cli("check", "--color", "sometimes")
    assert code == 2 and "sometimes" in err


def test_no_fix_is_accepted(tmp_path, run_cli):
    # nvim-lint's ruff definition passes --no-fix.
    write(tmp_path, "bad.py", BAD)
    code, out, err = run_cli("check", "--no-fix", "bad.py", "--output-format", "json")
    assert code == 1 and '"TL101"' in out and err == ""


def test_missing_path_does_not_claim_all_checks_passed(tmp_path, run_cli):
    write(tmp_path, "ok.py", "import torch\n")
    code, out, err = run_cli("check", "ok.py", "nope.py")
    assert code == 2
    assert "All checks passed!" not in out
    assert "nope.py: no such file or directory" in err


def test_empty_directory_warns(tmp_path, run_cli):
    (tmp_path / "empty").mkdir()
    write(tmp_path, "docs/readme.txt", "no python here")
    code, out, err = run_cli("check", "empty", "docs")
    assert code == 0
    assert "warning: no Python files found under empty" in err
    assert "warning: no Python files found under docs" in err
    write(tmp_path, "src/a.py", "import torch\n")
    assert "warning" not in run_cli("check", "src")[2]


def test_help_does_not_truncate_command_descriptions(run_cli):
    out = run_cli("--help")[1]
    assert "Explain a rule (e.g. TL101), or list all rules with --all." in out
    assert "Check files or directories for PyTorch pitfalls." in out
    commands = out.split("Commands:")[1]
    assert "..." not in commands


def test_nvim_lint_ruff_definition_works(tmp_path, run_cli):
    # The arguments nvim-lint's ruff linter passes, with the file's text on stdin.
    code, out, err = run_cli("check", "--force-exclude", "--quiet", "--stdin-filename", "train.py", "--no-fix",
                             "--output-format", "json", "-", input=BAD)
    findings = json.loads(out)
    assert code == 1 and err == ""
    assert [(f["code"], f["location"]["row"]) for f in findings] == [("TL101", 5)]  # TL102 is off by default
