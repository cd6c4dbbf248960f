"""The fork server of `--verify` (stdlib only). The worker runs it once torch is imported,
inside the sandbox and before any checked code: each checked file then gets a process of
its own, forked from this one, so torch is imported once per run and not once per file.

A file's process confines itself further before it reads a request (sandbox.confine_file):
a nested Landlock domain that writes only its own directory and cannot signal this server,
and a second seccomp filter. It never holds torchlint's pipes: it reads requests from a
pipe of its own and answers on another, and this server relays them.

Protocol, one JSON line per message from torchlint on stdin, one frame back on fd 3:
- {"kind": "open"}: fork the file's process; its first frame ({"kind": "ready", "layers"}
  or {"kind": "refused", "reason"}) is relayed.
- any other line is a request: it goes to the file's process, whose answer frame comes back
  unparsed (torchlint validates it), or {"kind": "died", "status", "signal"} when the
  process ended first, or {"kind": "malformed"} for an oversized frame.
- {"kind": "close"}: kill every process below this server (daemons of the file included:
  the server is a child subreaper), remove what the file's process wrote, then
  {"kind": "closed"}. Nothing of one file's process survives into the next one's.

Where fork cannot be used (no Linux), the worker answers in its own process instead, and
exits after "close", so that torchlint starts a fresh worker for the next file."""

from __future__ import annotations

import ctypes
import json
import os
import signal
import sys
import tempfile
from typing import Callable, Optional

import _frames
import _reap
import _tree

PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER = 1, 4, 36
SHM = "/dev/shm"

Serve = Callable[[str, int], None]  # answers one request line with one frame on the channel fd


LOG_TAIL = 4096


class FileProcess:
    def __init__(self, pid: int, requests: int, answers: int, work: str, log: str) -> None:
        self.pid, self.requests, self.answers, self.work, self.log = pid, requests, answers, work, log


def _read_exact(fd: int, size: int) -> Optional[bytes]:
    data = b""
    while len(data) < size:
        chunk = os.read(fd, size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _relay(proc: FileProcess, channel: int) -> bool:
    """One frame from the file's process to torchlint, unparsed. False when there was none."""
    head = _read_exact(proc.answers, 4)
    if head is None:
        return False
    size = int.from_bytes(head, "big")
    if size > _frames.MAX_FRAME:
        _frames.send(channel, {"kind": "malformed"})
        return True
    body = _read_exact(proc.answers, size)
    if body is None:
        return False
    view = memoryview(head + body)
    while view:
        view = view[os.write(channel, view):]
    return True


def _child(serve: Serve, spec: dict, work: str, requests: int, answers: int, log: int) -> None:
    import sandbox

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    os.dup2(requests, 0)
    os.dup2(answers, _frames.CHANNEL_FD)
    for fd in (1, 2):  # a log of its own: the shared one carried an offset, and a lease, across files
        os.dup2(log, fd)
    os.closerange(_frames.CHANNEL_FD + 1, 65536)  # the server's pipes to torchlint among them
    os.chdir(work)
    os.environ.update(HOME=work, TMPDIR=work)
    tempfile.tempdir = None
    try:
        layers = sandbox.confine_file(spec, work)
    except Exception as exc:  # noqa: BLE001 - no nested sandbox: this file's code must not run
        _frames.send(_frames.CHANNEL_FD, {"kind": "refused", "reason": str(exc)[:500]})
        os._exit(3)
    sys.stdin = open(0, encoding="utf-8", closefd=False)
    _frames.send(_frames.CHANNEL_FD, {"kind": "ready", "layers": layers})
    try:
        for line in sys.stdin:
            serve(line, _frames.CHANNEL_FD)
    finally:
        os._exit(0)


def _spawn(serve: Serve, spec: dict, number: int) -> FileProcess:
    work = os.path.join(os.getcwd(), f"file{number}")
    os.mkdir(work, 0o700)
    log_path = work + ".log"  # beside its directory, where it cannot open it by name
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC, 0o600)
    req_r, req_w = os.pipe()
    ans_r, ans_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            _child(serve, spec, work, req_r, ans_w, log)
        finally:
            os._exit(3)
    for fd in (req_r, ans_w, log):
        os.close(fd)
    return FileProcess(pid, req_w, ans_r, work, log_path)


def _tail(proc: FileProcess) -> str:
    """The last line of the file's log, for the report of how it ended. Non-blocking: the
    process may have put a lease on it."""
    try:
        fd = os.open(proc.log, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return ""
    try:
        size = os.fstat(fd).st_size
        data = os.pread(fd, LOG_TAIL, max(0, size - LOG_TAIL))
    except OSError:
        return ""
    finally:
        os.close(fd)
    lines = data.decode("utf-8", "replace").strip().splitlines()
    return lines[-1][:200] if lines else ""


def _status(proc: FileProcess) -> dict:
    try:
        pid, status = os.waitpid(proc.pid, 0)
    except ChildProcessError:
        return {"kind": "died", "status": -1, "signal": 0, "tail": _tail(proc)}
    if os.WIFSIGNALED(status):
        return {"kind": "died", "status": -1, "signal": os.WTERMSIG(status), "tail": _tail(proc)}
    return {"kind": "died", "status": os.WEXITSTATUS(status), "signal": 0, "tail": _tail(proc)}


def _wipe(path: str) -> None:
    """Empty `path` (however deep what is in it), keeping `path` itself."""
    try:
        _tree.empty(path)
    except OSError:
        pass


def _remove(path: str) -> None:
    try:
        _tree.remove(path)
    except OSError:
        pass


def _close(proc: Optional[FileProcess], spec: dict) -> None:
    if proc is not None:
        for fd in (proc.requests, proc.answers):
            try:
                os.close(fd)
            except OSError:
                pass
    _reap.sweep(os.getpid())
    if proc is not None:
        _remove(proc.work)
        try:
            os.unlink(proc.log)
        except OSError:
            pass
    if spec.get("shm"):
        _wipe(SHM)


def serve_forked(serve: Serve, spec: dict, channel: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # its children, of the same uid, cannot ptrace or read it
    current: Optional[FileProcess] = None
    opened = 0
    for line in sys.stdin:
        kind = _kind(line)
        if kind in ("open", "close"):
            _close(current, spec)
            current = None
            if kind == "close":
                _frames.send(channel, {"kind": "closed"})
                continue
            opened += 1
            current = _spawn(serve, spec, opened)
            if not _relay(current, channel):
                _frames.send(channel, _status(current))
            continue
        if current is None:
            _frames.send(channel, {"kind": "died", "status": -1, "signal": 0})
            continue
        try:
            os.write(current.requests, line.encode("utf-8"))
            relayed = _relay(current, channel)
        except OSError:
            relayed = False
        if not relayed:
            _frames.send(channel, _status(current))
            _close(current, spec)
            current = None
    _close(current, spec)


def serve_inline(serve: Serve, channel: int) -> None:
    """No fork: this process answers; it ends with its file (torchlint starts the next)."""
    for line in sys.stdin:
        kind = _kind(line)
        if kind == "open":
            _frames.send(channel, {"kind": "ready", "layers": []})
        elif kind == "close":
            _frames.send(channel, {"kind": "closed", "exiting": True})
            return
        else:
            serve(line, channel)


def _kind(line: str) -> str:
    try:
        message = json.loads(line)
    except ValueError:
        return ""
    return message.get("kind", "") if type(message) is dict else ""
