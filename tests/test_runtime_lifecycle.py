"""`torchlint run` keeps what is the program's: its stdout and stderr, its exit code; a timeout
and a step-budget cut-off are non-zero; the lint cache goes where `check` puts it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from test_runtime_run import ROOT, findings_of, torchlint_run

pytest.importorskip("torch")

pytestmark = pytest.mark.torch


def env_with_torchlint() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return env


def test_print_1_piped_to_cat_prints_1_and_nothing_else(tmp_path):
    shell = f"{sys.executable} -m torchlint run -- {sys.executable} -c 'print(1)' | cat"
    result = subprocess.run(["bash", "-c", shell], cwd=tmp_path, env=env_with_torchlint(), capture_output=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout == b"1\n"
    assert b"All checks passed!" in result.stderr  # the report went to stderr


def test_both_streams_pass_through_byte_for_byte(tmp_path):
    script = tmp_path / "streams.py"
    script.write_text("import sys\nsys.stdout.buffer.write(bytes(range(256)))\nsys.stderr.write('own stderr\\n')\n",
                      encoding="utf-8")
    env = env_with_torchlint()
    plain = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, timeout=60)
    run = subprocess.run([sys.executable, "-m", "torchlint", "run", "--", sys.executable, str(script)],
                         cwd=tmp_path, env=env, capture_output=True, timeout=120)
    assert run.stdout == plain.stdout == bytes(range(256))
    assert run.stderr.startswith(plain.stderr)  # the program's stderr first, then the report


def test_report_in_a_file_in_the_format_asked(tmp_path):
    script = tmp_path / "hello.py"
    script.write_text("print('hello')\n", encoding="utf-8")
    result = torchlint_run("--output-format", "json", "--", sys.executable, str(script), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "hello\n"
    assert findings_of(result) == []  # the JSON report, read from the -o file


STEPS = textwrap.dedent("""
    import sys

    import torch

    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(4):
        opt.zero_grad()
        model(torch.ones(2, 4)).sum().backward()
        opt.step()
    print("done")
    sys.exit(int(sys.argv[1]))
""")


@pytest.mark.parametrize("own, expected", [("0", 0), ("3", 3)])
def test_the_program_exit_code_is_kept(tmp_path, own, expected):
    script = tmp_path / "steps.py"
    script.write_text(STEPS, encoding="utf-8")
    result = torchlint_run("--", sys.executable, str(script), own, cwd=tmp_path)
    assert result.returncode == expected, result.stderr
    assert result.stdout == "done\n"
    assert f"exited with code {own} after 4 optimizer step(s)" in result.stderr


def test_a_program_killed_by_a_signal_exits_128_plus_the_signal(tmp_path):
    result = torchlint_run("--", sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGUSR1)",
                           cwd=tmp_path)
    assert result.returncode == 128 + 10, result.stderr
    assert "was killed by SIGUSR1 (signal 10)" in result.stderr  # no handler saw it: the kill is the crash
    assert "TL020 the program crashed: killed by SIGUSR1 (signal 10) after 0 optimizer step(s)" in result.stderr
    assert "All checks passed!" not in result.stderr


@pytest.mark.parametrize("options, expected", [(["--max-steps", "2"], 123), (["--max-steps", "0"], 0),
                                               (["--full"], 0), (["--max-steps", "4"], 123)])
def test_a_budget_cut_off_is_non_zero(tmp_path, options, expected):
    script = tmp_path / "steps.py"
    script.write_text(STEPS, encoding="utf-8")
    result = torchlint_run(*options, "--", sys.executable, str(script), "0", cwd=tmp_path)
    assert result.returncode == expected, result.stderr
    if expected:
        assert result.stdout == ""  # stopped inside the last step allowed
        assert "by the step budget" in result.stderr and "--full runs the whole program" in result.stderr


CHILD_TRAINERS = textwrap.dedent("""
    import multiprocessing
    import sys

    import torch


    def trainer():
        model = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            opt.zero_grad()
            model(torch.ones(2, 4)).sum().backward()
            opt.step()


    if __name__ == "__main__":
        children = [multiprocessing.get_context("fork").Process(target=trainer) for _ in range(2)]
        for child in children:
            child.start()
        for child in children:
            child.join()
        if sys.argv[1] == "crash":
            raise RuntimeError("the main process failed after its trainers")
""")


@pytest.mark.parametrize("mode, expected", [("crash", 1), ("clean", 123)])
def test_child_trainers_at_the_budget_then_a_main_crash_is_the_crash(tmp_path, mode, expected):
    script = tmp_path / "trainers.py"
    script.write_text(CHILD_TRAINERS, encoding="utf-8")
    result = torchlint_run("--max-steps", "2", "--output-format", "json", "--", sys.executable, str(script), mode,
                           cwd=tmp_path)
    assert result.returncode == expected, result.stderr
    crashes = [f for f in findings_of(result) if f["code"] == "TL020"]
    if mode == "crash":
        assert "RuntimeError: the main process failed after its trainers" in crashes[0]["message"]
    else:
        assert crashes == []


def test_the_lint_cache_goes_where_checks_goes(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\ncache-dir = "build/lint-cache"\n', encoding="utf-8")
    script = tmp_path / "train.py"
    script.write_text("import torch\nprint(torch.ones(1).sum().item())\n", encoding="utf-8")
    result = torchlint_run("--", sys.executable, str(script), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / ".torchlint_cache").exists()
    assert (tmp_path / "build" / "lint-cache").is_dir()


def test_no_cache_writes_none(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("import torch\nprint(torch.ones(1).sum().item())\n", encoding="utf-8")
    result = torchlint_run("--no-cache", "--", sys.executable, str(script), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / ".torchlint_cache").exists()
    default = torchlint_run("--", sys.executable, str(script), cwd=tmp_path)
    assert default.returncode == 0 and (tmp_path / ".torchlint_cache").is_dir()  # as `check` does


def test_json_report_file_is_json_even_when_the_program_prints(tmp_path):
    script = tmp_path / "noisy.py"
    script.write_text("print('[not json')\n", encoding="utf-8")
    report = tmp_path / "report.json"
    result = torchlint_run("-o", str(report), "--output-format", "json", "--", sys.executable, str(script),
                           cwd=tmp_path)
    assert result.returncode == 0 and result.stdout == "[not json\n"
    assert json.loads(report.read_text(encoding="utf-8")) == []


EPOCHS = textwrap.dedent("""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(4, 8)
            self.b = nn.Linear(8, 3)
            self.drop = nn.Dropout(0.1)

        def forward(self, x):
            return self.b(self.drop(F.dropout(self.a(x).relu(), p=0.2)))  # TL402


    def main():
        model = Net()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        x, y = torch.randn(12, 4), torch.randint(0, 3, (12,))
        for epoch in range(2):
            for i in range(3):
                opt.zero_grad()
                F.cross_entropy(model(x), y).backward()
                opt.step()
            model.eval()  # TL704
            with torch.no_grad():
                F.cross_entropy(model(x), y)


    main()
""")


def test_the_report_lists_what_the_budget_left_unjudged(tmp_path):
    script = tmp_path / "epochs.py"
    script.write_text(EPOCHS, encoding="utf-8")
    rows = {code: next(i for i, line in enumerate(EPOCHS.splitlines(), 1) if line.endswith(f"# {code}"))
            for code in ("TL402", "TL704")}
    cut = torchlint_run("--max-steps", "3", "--output-format", "json", "--", sys.executable, str(script),
                        cwd=tmp_path)
    assert cut.returncode == 123, cut.stderr  # one epoch: the budget ends right before the eval()
    verdicts = {f["code"]: f["runtime"] for f in findings_of(cut)}
    assert verdicts["TL704"]["verdict"] == "not-reached" and "--max-steps" in verdicts["TL704"]["evidence"]
    assert verdicts["TL402"]["verdict"] == "not-observed" and "(cut short:" in verdicts["TL402"]["evidence"]
    assert (f"not reached: 1 (TL704 epochs.py:{rows['TL704']}); reached but cut short: 1 "
            f"(TL402 epochs.py:{rows['TL402']}); `--full`") in cut.stderr
    whole = torchlint_run("--full", "--output-format", "json", "--", sys.executable, str(script), cwd=tmp_path)
    assert whole.returncode == 1, whole.stderr
    verdicts = {f["code"]: f["runtime"]["verdict"] for f in findings_of(whole)}
    assert verdicts["TL704"] == verdicts["TL402"] == "confirmed"
    assert "stopped early" not in whole.stderr
