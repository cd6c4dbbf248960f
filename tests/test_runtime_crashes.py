"""A crash is a result: the exception becomes a TL020 finding at the user's frame, with the step,
in every output format; the static finding whose hazard it is comes out confirmed with the
exception as evidence; the exit code is the program's. Each crash has a fixed twin."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest

from test_runtime_run import findings_of, torchlint_run

pytest.importorskip("torch")

pytestmark = pytest.mark.torch

TL101 = textwrap.dedent("""
    import torch
    import torch.nn.functional as F


    def main(broken):
        model = torch.nn.Linear(4, 3)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
        for step in range(3):
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()
        with torch.no_grad():
            val = F.cross_entropy(model(x), y)
            if broken:
                val.backward()  # TL101


    main(True)
""")

TL201 = textwrap.dedent("""
    import torch
    import torch.nn.functional as F


    def train(cast):
        model = torch.nn.Linear(4, 3)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
        for step in range(2):
            opt.zero_grad()
            target = y
            if cast and step == 1:
                target = y.float()  # TL201
            F.cross_entropy(model(x), target).backward()  # raises
            opt.step()


    train(True)
""")

TL601 = textwrap.dedent("""
    import torch


    class Settings:
        lr = 0.1


    def resume(path):
        return torch.load(path)  # TL601


    model = torch.nn.Linear(2, 2)
    torch.save({"model": model.state_dict(), "settings": Settings()}, "ckpt.pt")
    state = resume("ckpt.pt")
""")

FIXES = {"TL101": ("main(True)", "main(False)"), "TL201": ("train(True)", "train(False)"),
         "TL601": ('"settings": Settings()', '"settings": {"lr": 0.1}')}

EXPECTED = {
    "TL101": ("RuntimeError: element 0 of tensors does not require grad", "in `main`", 3),
    "TL201": ("RuntimeError: expected target dtype to be Long", "in `train`", 1),
    "TL601": ("UnpicklingError: Weights only load failed (WeightsUnpickler error: Unsupported global",
              "in `resume`", 0),
}


def row_of(text: str, marker: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if line.endswith(f"# {marker}"))


def run(tmp_path, text: str, fmt: str = "json"):
    script = tmp_path / "train.py"
    script.write_text(text, encoding="utf-8")
    return torchlint_run("--output-format", fmt, "--", sys.executable, str(script), cwd=tmp_path)


@pytest.mark.parametrize("code", sorted(EXPECTED))
def test_a_crash_is_a_finding_and_confirms_the_static_one(tmp_path, code):
    text = {"TL101": TL101, "TL201": TL201, "TL601": TL601}[code]
    result = run(tmp_path, text)
    assert result.returncode == 1, result.stderr  # Python's exit code for an uncaught exception
    findings = findings_of(result)
    [crash] = [f for f in findings if f["code"] == "TL020"]
    exception, function, steps = EXPECTED[code]
    row = row_of(text, code)
    raised = row_of(text, "raises") if "# raises" in text else row  # the loss, a line after the cast
    assert exception in crash["message"] and function in crash["message"]
    assert f"(train.py:{raised})" in crash["message"] and f"after {steps} optimizer step(s)" in crash["message"]
    assert crash["location"]["row"] == raised
    assert crash["runtime"]["verdict"] == "confirmed"
    [static] = [f for f in findings if f["code"] == code]
    assert static["runtime"]["verdict"] == "confirmed", static["runtime"]
    assert exception.split(" (")[0].split(": ", 1)[1] in static["runtime"]["evidence"]
    assert f"it confirms {code} at train.py:{row}" in crash["message"]


@pytest.mark.parametrize("code", sorted(EXPECTED))
def test_the_fixed_twin_does_not_crash_and_confirms_nothing(tmp_path, code):
    text = {"TL101": TL101, "TL201": TL201, "TL601": TL601}[code]
    before, after = FIXES[code]
    result = run(tmp_path, text.replace(before, after))
    assert result.returncode == 0, result.stderr
    findings = findings_of(result)
    assert [f for f in findings if f["code"] == "TL020"] == []
    assert [f for f in findings if f["runtime"]["verdict"] == "confirmed"] == []


def test_a_crash_never_reads_all_checks_passed(tmp_path):
    crash = "raise ValueError('bad config')\n"
    text = run(tmp_path, crash, "full")
    assert text.returncode == 1
    assert "All checks passed!" not in text.report and "TL020" in text.report
    assert "ValueError: bad config, raised in `<module>` (train.py:1) after 0 optimizer step(s)" in text.report
    github = run(tmp_path, crash, "github")
    assert github.report.startswith("::error file=train.py,line=1,") and "TL020" in github.report
    sarif = json.loads(run(tmp_path, crash, "sarif").report)
    assert [r["ruleId"] for r in sarif["runs"][0]["results"]] == ["TL020"]


def test_a_crash_without_a_static_finding_names_the_rule_it_matches(tmp_path):
    # The loss is computed under no_grad, the backward outside it: no static TL101, same error.
    text = "import torch\nwith torch.no_grad():\n    loss = torch.nn.Linear(2, 1)(torch.ones(1, 2)).sum()\nloss.backward()\n"
    [crash] = findings_of(run(tmp_path, text))
    assert crash["code"] == "TL020" and crash["location"]["row"] == 4
    assert crash["message"].endswith("(the failure TL101 describes)")


# Crashes no sys.excepthook of ours sees, in one run: a forked trainer whose DataLoader worker
# raised (multiprocessing prints the child's exception itself; the worker's traceback is text in
# the message), a forked child that aborts (a fatal signal: faulthandler's dump), and a main
# process whose own excepthook (rich's, loguru's) replaced ours.
UNHOOKED = textwrap.dedent("""
    import multiprocessing
    import os
    import sys
    import traceback

    import torch
    from torch.utils.data import DataLoader, Dataset


    class Broken(Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            return torch.ones(2)[5]  # worker


    def trainer():
        for batch in DataLoader(Broken(), num_workers=1):
            pass


    def aborts():
        os.abort()  # abort


    if __name__ == "__main__":
        for target in (trainer, aborts):
            child = multiprocessing.get_context("fork").Process(target=target)
            child.start()
            child.join()
        sys.excepthook = lambda *exc: traceback.print_exception(*exc)
        raise ValueError("main failed")  # main
""")


def test_crashes_no_excepthook_of_ours_sees_are_findings(tmp_path):
    result = run(tmp_path, UNHOOKED)
    assert result.returncode == 1, result.stderr
    assert "Process ForkProcess-1:\nTraceback" in result.stderr  # what multiprocessing prints is unchanged
    assert "runtime/monitor.py" not in result.stderr  # the hooks that saw the crashes are not in a traceback
    crashes = {f["location"]["row"]: f["message"] for f in findings_of(result) if f["code"] == "TL020"}
    assert crashes == {
        row_of(UNHOOKED, "worker"): "the program crashed: IndexError: index 5 is out of bounds for dimension 0 with "
                                    "size 2 (Caught IndexError in DataLoader worker process 0), raised in "
                                    f"`__getitem__` (train.py:{row_of(UNHOOKED, 'worker')}) after 0 optimizer step(s)",
        row_of(UNHOOKED, "abort"): "the program crashed: Fatal Python error: Aborted at `aborts` "
                                   f"(train.py:{row_of(UNHOOKED, 'abort')}) after 0 optimizer step(s)",
        row_of(UNHOOKED, "main"): "the program crashed: ValueError: main failed, raised in `<module>` "
                                  f"(train.py:{row_of(UNHOOKED, 'main')}) after 0 optimizer step(s)",
    }
