"""The watchdog of `torchlint run`: stops the program's processes when torchlint dies.

torchlint sweeps the program's process tree on every way out it can handle (exit, crash,
timeout, Ctrl-C, SIGTERM), but not on SIGKILL. So the launcher starts this script, by path and
with only the standard library, in its own session, reading a pipe whose write end only
torchlint holds. The read returns EOF when torchlint is gone, however it went; the watchdog then
kills the program's session, every process below the program, and every process that became a
child of torchlint after the watchdog started (a process that called setsid() leaves the
session, and when its parent dies it is re-parented to torchlint, the subreaper). torchlint's
other children, there before the program, are not the program's and are left alone.

    python -I watchdog.py TORCHLINT_PID PROGRAM_PID
"""

from __future__ import annotations

import importlib.util
import os
import select
import signal
import sys
import time

CENSUS_SECONDS = 0.5


def _load_reap():  # type: ignore[no-untyped-def]
    """torchlint/verify/_reap.py, by path: this script runs as `python -I`, without torchlint."""
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location("_tl_reap", os.path.join(os.path.dirname(here), "verify", "_reap.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_reap = _load_reap()


def _stat_table() -> dict[int, tuple[int, int, str]]:
    """pid -> (ppid, session, start time) of every visible, live process."""
    table: dict[int, tuple[int, int, str]] = {}
    for pid, fields in _reap.stat_table().items():
        if len(fields) > 19 and fields[0] not in (b"Z", b"X"):
            try:
                table[pid] = (int(fields[1]), int(fields[3]), fields[19].decode("ascii", "replace"))
            except ValueError:
                continue
    return table


def _below(root: int, table: dict[int, tuple[int, int, str]]) -> set[int]:
    found: set[int] = set()
    frontier = {root}
    while frontier:
        frontier = {p for p, (ppid, _, _) in table.items() if ppid in frontier} - found
        found |= frontier
    return found


def _children(pid: int, table: dict[int, tuple[int, int, str]]) -> set[tuple[int, str]]:
    return {(p, start) for p, (ppid, _, start) in table.items() if ppid == pid}


def _ours(torchlint: int, program: int, earlier: set[tuple[int, str]],
          table: dict[int, tuple[int, int, str]]) -> dict[int, str]:
    """pid -> start time of the program's processes (the start time guards against pid reuse)."""
    roots = {program} | {p for p, (_, sid, _) in table.items() if sid == program}
    roots |= {p for p, start in _children(torchlint, table) - earlier}
    pids = set(roots)
    for pid in roots:
        pids |= _below(pid, table)
    pids.discard(os.getpid())
    return {p: table[p][2] for p in pids if p in table}


def main(argv: list[str]) -> int:
    torchlint, program = int(argv[1]), int(argv[2])
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    table = _stat_table()
    earlier = {(p, start) for p, start in _children(torchlint, table) if p != program}
    seen: dict[int, str] = {}
    while True:
        ready, _, _ = select.select([sys.stdin], [], [], CENSUS_SECONDS)
        if ready and not os.read(sys.stdin.fileno(), 4096):
            break  # EOF: torchlint is gone, or done with the program
        seen = _ours(torchlint, program, earlier, _stat_table())
    for _ in range(20):
        table = _stat_table()
        targets = {p for p, start in seen.items() if p in table and table[p][2] == start}
        targets |= set(_ours(torchlint, program, earlier, table))
        if not targets:
            return 0
        for pid in targets:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.05)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
