"""`check --watch` and the progress line, the two CLI behaviours that depend on time and on
the terminal (issue 21)."""

from __future__ import annotations

import os
import pty
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from torchlint import api, progress
from torchlint.cli import main
from torchlint.config import CliOverrides

REMOVED = "import torch\nx = torch.solve(b, A)\n"
REMOVED_TWICE = REMOVED + "y = torch.symeig(x)\n"


def _tree(tmp_path: Path, files: int = 3) -> Path:
    for i in range(files):
        (tmp_path / f"m{i}.py").write_text(REMOVED)
    return tmp_path


def _run_main(args: list[str], stderr, monkeypatch) -> int:
    """The real entry point (stream guards included), with stderr on the given stream."""
    monkeypatch.setattr(sys, "stderr", stderr)
    try:
        main(args, prog_name="torchlint")
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def _read_all(fd: int) -> bytes:
    os.set_blocking(fd, False)
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except (BlockingIOError, OSError):
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def test_run_tasks_reports_each_file_done_cache_hits_included(tmp_path):
    tree = _tree(tmp_path, 4)
    calls: list[tuple[int, int]] = []
    request = api.CheckRequest([str(tree)], CliOverrides(), isolated=True, cwd=tree, cache_dir=tmp_path / "c",
                               progress=lambda done, total: calls.append((done, total)))
    api.check(request)
    assert calls[-1] == (4, 4) and [d for d, _ in calls] == sorted(d for d, _ in calls)
    (tree / "m0.py").write_text(REMOVED_TWICE)  # three cache hits, one file to lint
    calls.clear()
    api.check(request)
    assert calls == [(3, 4), (4, 4)]


def test_progress_line_on_a_terminal_is_drawn_in_place_and_cleared(tmp_path, monkeypatch):
    monkeypatch.chdir(_tree(tmp_path))
    monkeypatch.setattr(progress, "DELAY", 0.0)  # the run is fast; the one-second wait is tested below
    master, slave = pty.openpty()
    with os.fdopen(slave, "w", buffering=1) as tty:
        code = _run_main(["check", "--isolated", "--no-cache", "-q", "."], tty, monkeypatch)
        assert code == 1
        quiet = _read_all(master)
        code = _run_main(["check", "--isolated", "--no-cache", "."], tty, monkeypatch)
    drawn = _read_all(master).decode()
    os.close(master)
    assert code == 1
    assert quiet == b""  # -q: no progress line
    assert "\r\x1b[2KChecked 3/3 files" in drawn  # overwritten in place
    assert drawn.endswith("\r\x1b[2K")  # and erased at the end
    assert "\n" not in drawn


def test_progress_waits_a_second_and_never_goes_to_a_pipe(tmp_path, monkeypatch):
    monkeypatch.chdir(_tree(tmp_path))
    read, write = os.pipe()
    monkeypatch.setattr(progress, "DELAY", 0.0)
    with os.fdopen(write, "w") as pipe:
        assert _run_main(["check", "--isolated", "--no-cache", "."], pipe, monkeypatch) == 1
    assert b"Checked" not in _read_all(read)
    os.close(read)
    master, slave = pty.openpty()
    with os.fdopen(slave, "w") as tty:
        line = progress.Progress(tty, delay=1.0)
        line(1, 2)  # before the first second: nothing
        line.close()
    assert _read_all(master) == b""
    os.close(master)


def _lines(stream, sink: queue.Queue) -> None:
    for raw in iter(stream.readline, ""):
        sink.put(raw)


def _until(sink: queue.Queue, text: str, seen: list[str], deadline: float) -> None:
    while not any(text in line for line in seen):
        try:
            seen.append(sink.get(timeout=max(0.01, deadline - time.monotonic())))
        except queue.Empty:
            raise AssertionError(f"{text!r} never came; got {seen}") from None


def test_watch_lints_again_on_change_and_ctrl_c_exits_0(tmp_path):
    pytest.importorskip("watchfiles")
    (tmp_path / "a.py").write_text(REMOVED)
    # An ignored SIGINT stays ignored across exec (a suite started as a shell's background job
    # has it ignored): the child gets Ctrl-C's default back, as an interactive shell gives it.
    proc = subprocess.Popen([sys.executable, "-m", "torchlint", "check", "--watch", "--isolated", "--no-cache", "."],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    out: queue.Queue = queue.Queue()
    err: queue.Queue = queue.Queue()
    for stream, sink in ((proc.stdout, out), (proc.stderr, err)):
        threading.Thread(target=_lines, args=(stream, sink), daemon=True).start()
    stdout: list[str] = []
    stderr: list[str] = []
    try:
        deadline = time.monotonic() + 10
        _until(err, "Watching for file changes.", stderr, deadline)
        _until(out, "Found 1 finding.", stdout, deadline)
        (tmp_path / "a.py").write_text(REMOVED_TWICE)
        _until(out, "torch.symeig", stdout, deadline)
        _until(out, "Found 2 findings.", stdout, deadline)
        assert sum("Watching for file changes." in line for line in stderr) >= 1
    finally:
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=10)
    assert code == 0
    assert "File change detected" in "".join(stderr) + "".join(err.queue)
    assert "Traceback" not in "".join(err.queue) and "KeyboardInterrupt" not in "".join(err.queue)


def test_watch_refuses_stdin(run_cli):
    code, _, err = run_cli("check", "--watch", "-")
    assert code == 2 and "--watch cannot be combined with stdin" in err
