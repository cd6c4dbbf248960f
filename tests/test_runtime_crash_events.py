"""How the crash events of `torchlint run` are read, without running a program: an exception
that carries another process's traceback, faulthandler's dump of a fatal signal, and a program
killed by a signal nothing in it could see. No torch."""

from __future__ import annotations

import os
from pathlib import Path

from torchlint.diagnostics import Finding
from torchlint.rules.meta.program_crashed import confirm_by_crash, describe, name_runtime_causes
from torchlint.runtime.analysis import fault_crash
from torchlint.runtime.command import _killed
from torchlint.runtime.judging import RuntimeProblem
from torchlint.runtime.launcher import Outcome
from torchlint.runtime.support import UserCode, crash_fields, embedded_traceback

STDLIB = os.path.dirname(os.__file__)  # not the user's code


def spawn_error(script: Path) -> Exception:
    """What torch.multiprocessing.spawn raises in the parent when a child failed."""
    return RuntimeError(
        "\n\n-- Process 0 terminated with the following error:\nTraceback (most recent call last):\n"
        f'  File "{STDLIB}/multiprocessing/process.py", line 90, in _wrap\n'
        "    fn(i, *args)\n"
        f'  File "{script}", line 6, in trainer\n'
        "    loss.backward()\n"
        "    ^^^^^^^^^^^^^^^\n"
        "RuntimeError: element 0 of tensors does not require grad and does not have a grad_fn\n")


def test_an_embedded_traceback_is_the_crash(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("x\n" * 10, encoding="utf-8")
    try:
        raise spawn_error(script)
    except RuntimeError as exc:
        site, data = crash_fields(UserCode(), type(exc), exc, exc.__traceback__)
    assert site == [str(script), 6, "trainer", 6, 6]  # the child's line, not torch's nor this test's raise
    assert data["frames"][-1] == site and len(data["frames"]) == 2  # this test's frame, then the child's
    assert (data["exception"], data["message"]) == (
        "RuntimeError", "element 0 of tensors does not require grad and does not have a grad_fn")
    assert data["detail"] == ["-- Process 0 terminated with the following error:"]
    event = {**data, "site": site, "step": 0}
    assert describe(event, tmp_path) == (
        "RuntimeError: element 0 of tensors does not require grad and does not have a grad_fn (Process 0 "
        "terminated with the following error), raised in `trainer` (train.py:6) after 0 optimizer step(s)")


def test_text_without_a_complete_traceback_is_no_crash_of_its_own():
    assert embedded_traceback("Traceback (most recent call last):\n") is None
    assert embedded_traceback("expected Long, got Float") is None
    assert embedded_traceback('Traceback (most recent call last):\nValueError: x\n') is None  # no frame


FAULT = """Fatal Python error: Segmentation fault

Thread 0x00007fed8484f6c0 (most recent call first):
  File "/usr/lib/python3.11/threading.py", line 982 in run

Current thread 0x00007fed85693b80 (most recent call first):
  File "{stdlib}/functools.py", line 125 in forward
  File "{script}", line 7 in step
  File "{script}", line 9 in <module>

Extension modules: numpy.core._multiarray_umath (total: 1)
"""


def test_a_fatal_signal_is_a_crash_at_the_innermost_user_frame(tmp_path):
    script = str(tmp_path / "train.py")
    events = [{"kind": "process", "pid": 42, "rank": 1},
              {"kind": "counts", "pid": 42, "steps": 1, "files": [], "main": script},
              {"kind": "counts", "pid": 42, "steps": 3, "files": [script], "main": script},
              {"kind": "counts", "pid": 7, "steps": 9, "files": [script], "main": script}]
    crash = fault_crash(FAULT.format(script=script, stdlib=STDLIB), 42, events)
    assert crash is not None
    assert crash["site"] == [script, 7, "step", 7, 7] and [f[1] for f in crash["frames"]] == [9, 7]
    assert (crash["step"], crash["rank"], crash["message"]) == (3, 1, "Segmentation fault")
    assert describe(crash, tmp_path) == "Fatal Python error: Segmentation fault at `step` (train.py:7) after 3 " \
                                        "optimizer step(s)"
    assert fault_crash("", 42, events) is None  # the file every process opens, empty when it did not die so


def test_a_program_killed_unseen_is_a_crash_unless_torchlint_stopped_it():
    counts = [{"kind": "counts", "pid": 5, "steps": 4}]
    [killed] = _killed(Outcome(returncode=-9), counts)
    assert describe(killed, Path.cwd()) == "killed by SIGKILL (signal 9) after 4 optimizer step(s)"
    assert _killed(Outcome(returncode=-9, timed_out=True), counts) == []
    assert _killed(Outcome(returncode=-2, interrupted=True), counts) == []
    assert _killed(Outcome(returncode=1), counts) == []
    assert _killed(Outcome(returncode=-6), counts + [{"kind": "crash"}]) == []  # faulthandler's dump says more


def test_a_crash_names_the_runtime_finding_at_its_line():
    crash = RuntimeProblem("TL020", ["/p/train.py", 4, "<module>", 1, 4],
                           "the program crashed: IndexError: Target 5 is out of bounds, raised in ...")
    labels = RuntimeProblem("TL221", ["/p/train.py", 4, "<module>", 1, 4], "labels ... range over [1, 5]")
    elsewhere = RuntimeProblem("TL121", ["/p/train.py", 3, "<module>", 1, 4], "NaN")
    name_runtime_causes([crash, labels, elsewhere])
    assert crash.message.endswith("raised in ...; TL221 reported this line")
    assert labels.message == "labels ... range over [1, 5]"


def test_a_crash_a_rule_documents_confirms_it_in_place(tmp_path):
    """TL306's documented ValueError at the DataLoader it flags, raised through that line."""
    script = str(tmp_path / "train.py")
    static = Finding(code="TL306", message="m", path="train.py", row=5, col=1, end_row=5, end_col=9)
    elsewhere = Finding(code="TL306", message="m", path="train.py", row=9, col=1, end_row=9, end_col=9)
    crash = {"exception": "ValueError", "message": "persistent_workers option needs num_workers > 0", "step": 0,
             "site": [script, 5, "main", 2, 6], "frames": [[script, 5, "main", 2, 6]]}
    assert confirm_by_crash([static, elsewhere], [crash], tmp_path) == {0: ["TL306 at train.py:5"]}
    assert static.runtime is not None and static.runtime.confirmed
    assert "ValueError: persistent_workers option needs num_workers > 0" in static.runtime.evidence
    assert elsewhere.runtime is None  # not on the traceback
