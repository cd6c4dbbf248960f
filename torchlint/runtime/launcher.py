"""Start the user's command with the monitors on its PYTHONPATH, and make sure no process it
started outlives us: its own session and process group, a child subreaper on Linux (so
processes that detach are still ours to stop), a sweep of the whole process tree on every way
out we see (normal exit, crash, timeout, Ctrl-C, SIGTERM), and for the one we cannot see
(SIGKILL to torchlint) PR_SET_PDEATHSIG on the program plus a watchdog process (watchdog.py).

The program inherits our stdin, stdout and stderr untouched: its streams stay its own."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from torchlint.runtime.monitor import ENV_DIR, ENV_MAX_STEPS
from torchlint.verify._reap import stat_table

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional

BOOT_DIR = Path(__file__).resolve().parent / "boot"
GRACE_SECONDS = 5.0  # after SIGINT, before SIGKILL
PR_SET_CHILD_SUBREAPER = 36
PR_SET_PDEATHSIG = 1
WATCHDOG = Path(__file__).resolve().parent / "watchdog.py"


@dataclass
class Outcome:
    returncode: Optional[int] = None
    timed_out: bool = False
    interrupted: bool = False
    start_error: Optional[str] = None
    wall_seconds: float = 0.0


class _Terminated(Exception):
    """SIGTERM to torchlint: stop the program as for Ctrl-C."""


def program_env(events_dir: Path, max_steps: int) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(BOOT_DIR)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env[ENV_DIR] = str(events_dir)
    env[ENV_MAX_STEPS] = str(max_steps)
    return env


def run_program(command: list[str], env: dict[str, str], timeout: Optional[float]) -> Outcome:
    outcome = Outcome()
    _become_subreaper()
    before = _children(os.getpid())
    started = time.monotonic()
    previous = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        try:
            proc = subprocess.Popen(command, env=env, start_new_session=True, preexec_fn=_die_with_parent)
        except OSError as exc:
            outcome.start_error = f"cannot run {command[0]!r}: {exc.strerror or exc}"
            return outcome
        watchdog = _start_watchdog(proc.pid)
        if watchdog is not None:
            before.add(watchdog[0].pid)  # not one of the program's: our sweep must leave it alone
        try:
            outcome.returncode = proc.wait(timeout=timeout or None)
        except subprocess.TimeoutExpired:
            outcome.timed_out = True
        except (KeyboardInterrupt, _Terminated):
            outcome.interrupted = True
        finally:
            stop_all(proc, before, polite=outcome.timed_out or outcome.interrupted)
            _stop_watchdog(watchdog)
            if outcome.returncode is None:
                outcome.returncode = proc.returncode
    finally:
        signal.signal(signal.SIGTERM, previous)
        outcome.wall_seconds = time.monotonic() - started
    return outcome


def _prctl() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _prctl()  # looked up here, not in the forked child before exec


def _die_with_parent() -> None:
    """In the child, before exec: SIGKILL when torchlint dies (the watchdog stops the rest)."""
    if _PRCTL is not None:
        _PRCTL(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _start_watchdog(program: int) -> Optional[tuple[subprocess.Popen, int]]:
    """The watchdog holds the read end of a pipe; our write end closes when we die, however."""
    if not sys.platform.startswith("linux"):
        return None
    read_end, write_end = os.pipe()
    try:
        watchdog = subprocess.Popen([sys.executable, "-I", str(WATCHDOG), str(os.getpid()), str(program)],
                                    stdin=read_end, stdout=subprocess.DEVNULL, start_new_session=True)
    except OSError:
        os.close(write_end)
        return None
    finally:
        os.close(read_end)
    os.set_inheritable(write_end, False)
    return watchdog, write_end


def _stop_watchdog(watchdog: Optional[tuple[subprocess.Popen, int]]) -> None:
    """After our own sweep: the watchdog sweeps once more (a no-op) and exits. Waiting for it
    keeps its sweep from meeting processes we start later (the lint workers)."""
    if watchdog is None:
        return
    process, write_end = watchdog
    os.close(write_end)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _raise_terminated(signum: int, frame: object) -> None:
    raise _Terminated()


def _become_subreaper() -> None:
    if _PRCTL is not None:  # without it, the group kill still covers the usual cases
        _PRCTL(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def stop_all(proc: subprocess.Popen, before: set[int], polite: bool) -> None:
    """Stop the program and every process it started. `polite`: SIGINT first (the program's
    own cleanup runs, and the monitors write their counters), then SIGKILL."""
    if polite and proc.poll() is None:
        _signal_group(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            pass
    for _ in range(20):
        tree = _tree(proc.pid, before)
        _signal_group(proc.pid, signal.SIGKILL)
        for pid in tree:
            _kill(pid)
        proc.poll()
        _reap(tree)
        if not [pid for pid in _tree(proc.pid, before) if _alive(pid)] and proc.returncode is not None:
            return
        time.sleep(0.05)


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _reap(pids: set[int]) -> None:
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # not our child: its own parent reaps it
            pass


def _proc_table() -> dict[int, tuple[int, int, str]]:
    """pid -> (ppid, pgid, state) for every process we can see (Linux /proc)."""
    table: dict[int, tuple[int, int, str]] = {}
    for pid, fields in stat_table().items():
        try:
            table[pid] = (int(fields[1]), int(fields[2]), fields[0].decode("ascii", "replace"))
        except ValueError:
            continue
    return table


def _children(pid: int) -> set[int]:
    return {p for p, (ppid, _, _) in _proc_table().items() if ppid == pid}


def _tree(leader: int, before: set[int]) -> set[int]:
    """The program's processes: its group, its descendants, and orphans re-parented to us."""
    table = _proc_table()
    me = os.getpid()
    roots = {leader} | {p for p, (ppid, pgid, _) in table.items()
                        if pgid == leader or (ppid == me and p not in before)}
    found, frontier = set(), set(roots)
    while frontier:
        found |= frontier
        frontier = {p for p, (ppid, _, _) in table.items() if ppid in frontier} - found
    return {p for p in found if p in table and p != me}


def _alive(pid: int) -> bool:
    state = _proc_table().get(pid)
    return state is not None and state[2] not in ("Z", "X")
