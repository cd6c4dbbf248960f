"""The process table from /proc, and the stop-then-kill sweep of a process tree (stdlib only:
the launcher and the fork server load it by path, inside the sandbox)."""

from __future__ import annotations

import os
import signal


def stat_table() -> dict[int, list[bytes]]:
    """pid -> the fields of /proc/<pid>/stat after the command name (state, ppid, pgrp,
    session, ...; field i of proc(5) is at index i - 3), for every process we can see."""
    table: dict[int, list[bytes]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return table
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 2:
            table[int(entry)] = fields
    return table


def descendants(root: int, table: dict[int, list[bytes]]) -> list[int]:
    children: dict[int, list[int]] = {}
    for pid, fields in table.items():
        try:
            children.setdefault(int(fields[1]), []).append(pid)
        except ValueError:
            continue
    out, todo, seen = [], [root], {root}
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in seen:
                seen.add(child)
                out.append(child)
                todo.append(child)
    return out


def sweep(root: int) -> None:
    """Stop, then kill, every descendant of `root` (the caller, a child subreaper, so that
    orphans stay below it) until none is left: a stopped process cannot fork."""
    for _ in range(1000):
        left = descendants(root, stat_table())
        if not left:
            return
        stop_and_kill(left)
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            pass


def stop_and_kill(pids: list[int]) -> None:
    """SIGSTOP every one first, so that none can fork while the others are killed."""
    for sig in (signal.SIGSTOP, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
