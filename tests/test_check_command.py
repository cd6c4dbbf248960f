"""The click-free `check` (torchlint/check_command.py): its parser agrees with click's on every
command line it accepts, refuses the ones click must answer (errors, help, other flags), and
a run through it prints and exits exactly as the click command does."""

from __future__ import annotations

import io
import sys

import pytest

from torchlint import check_command, cli

# (argv after `check`, whether the fast parser takes it)
ARGV = [
    ([], True),
    (["a.py"], True),
    (["a.py", "b.py", "-q", "--exit-zero"], True),
    (["--no-cache", "a.py", "--statistics"], True),
    (["a.py", "--output-format", "json"], True),
    (["a.py", "--output-format=concise", "--color=never"], True),
    (["a.py", "--select", "TL1,TL501", "--ignore=TL101", "--extend-select", "TL207"], True),
    (["a.py", "--select="], True),  # click passes "" on; `check` says the selection is empty
    (["a.py", "--select", "NOPE"], True),  # an unknown code is check's error, not the parser's
    (["--isolated", "--force-exclude", "--quiet", "a.py"], True),
    (["a.py", "--output-format", "bogus"], False),  # click's usage error
    (["a.py", "--color", "sometimes"], False),
    (["a.py", "--output-format"], False),  # missing value
    (["a.py", "--select", "-q"], False),
    (["a.py", "-q", "-q"], False),  # repeated: click's rule
    (["a.py", "--select", "TL1", "--select", "TL2"], False),
    (["-qq", "a.py"], False),
    (["-", "a.py"], False),
    (["--", "a.py"], False),
    (["a.py", "--help"], False),
    (["a.py", "-h"], False),
    (["a.py", "--fix"], False),
    (["a.py", "--selec", "TL1"], False),  # no abbreviations
    (["a.py", "--output-file", "out.txt"], False),
    ([""], False),
]


def _click_params(args: list[str]) -> dict:
    ctx = cli.check.make_context("check", list(args))
    return dict(ctx.params)


def test_the_defaults_are_click_s():
    defaults = _click_params([])
    assert defaults.pop("paths") == () and check_command.DEFAULTS == defaults


@pytest.mark.parametrize("args,fast", ARGV)
def test_the_fast_parser_agrees_with_click(args, fast, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text("x = 1\n")
    parsed = check_command.fast_options(["check", *args])
    assert (parsed is not None) == fast
    if parsed is not None:
        paths, options = parsed
        params = _click_params(args)
        assert params.pop("paths") == paths
        assert params == vars(options)


def test_an_unreadable_path_and_shell_completion_go_to_click(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(check_command.os, "access", lambda path, mode: False)
    assert check_command.fast_options(["check", "."]) is None  # click says it is not readable
    monkeypatch.undo()
    assert check_command.fast_options(["check", "missing.py"]) is not None  # no such path: check's error
    monkeypatch.setenv("_TORCHLINT_COMPLETE", "bash_complete")
    assert check_command.fast_options(["check", "a.py"]) is None


def _fast(argv: list[str], monkeypatch) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    with pytest.raises(SystemExit) as exited:
        check_command.fast_main(argv)
    monkeypatch.setattr(sys, "stdout", sys.__stdout__)
    monkeypatch.setattr(sys, "stderr", sys.__stderr__)
    return exited.value.code, out.getvalue(), err.getvalue()


RUNS = [
    ["check", "bad.py", "--no-cache"],
    ["check", "clean.py", "--no-cache"],
    ["check", "bad.py", "clean.py", "--no-cache", "-q", "--exit-zero"],
    ["check", "bad.py", "--no-cache", "--output-format", "json", "--statistics"],
    ["check", "bad.py", "--no-cache", "--output-format=concise", "--color", "always"],
    ["check", "bad.py", "missing.py", "--no-cache"],
    ["check", "bad.py", "--no-cache", "--select", ","],
    ["check", "bad.py", "--no-cache", "--select", "TL9x"],
    ["check", "bad.py", "--no-cache", "--output-format", "sarif", "--statistics"],
    ["check", "--no-cache", "--isolated", "--ignore", "TL101"],
]


def test_a_fast_run_prints_and_exits_as_the_click_command(tmp_path, monkeypatch, run_cli):
    (tmp_path / "bad.py").write_text("import torch\nwith torch.no_grad():\n    loss = net(x)\n    loss.backward()\n")
    (tmp_path / "clean.py").write_text("x = 1\n")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))  # no recorded answer
    seen = set()
    for argv in RUNS:
        expected = run_cli(*argv, cwd=tmp_path)
        got = _fast(argv, monkeypatch)
        assert got == expected, argv
        seen.add(got[0])
    assert seen == {0, 1, 2}  # the table covers every exit code


def test_a_failed_write_exits_2_as_the_click_command(tmp_path, monkeypatch):
    (tmp_path / "bad.py").write_text("import torch\nwith torch.no_grad():\n    loss = net(x)\n    loss.backward()\n")
    monkeypatch.chdir(tmp_path)

    class Full(io.StringIO):
        def write(self, text: str) -> int:
            raise OSError(28, "No space left on device")

    err = io.StringIO()
    monkeypatch.setattr(check_command.os, "dup2", lambda fd, to: None)  # keep the test's own stdout
    monkeypatch.setattr(sys, "stdout", Full())
    monkeypatch.setattr(sys, "stderr", err)
    with pytest.raises(SystemExit) as exited:
        check_command.fast_main(["check", "bad.py", "--no-cache"])
    monkeypatch.undo()
    assert exited.value.code == 2
    assert "cannot write the report to standard output" in err.getvalue()


def test_click_calls_the_same_body(monkeypatch):
    calls = []
    monkeypatch.setattr(check_command, "run_check", lambda paths, o: calls.append((paths, vars(o))))
    from click.testing import CliRunner

    assert CliRunner().invoke(cli.main, ["check", "a.py", "-q"]).exit_code == 0
    assert calls == [(("a.py",), {**check_command.DEFAULTS, "quiet": True})]
