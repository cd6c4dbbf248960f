"""The bounds of the `--verify` sandbox as torchlint sees them from outside: which processes
belong to it, their resident memory and tasks, the temp dir's disk use, and the sweep that
stops and kills them all (process.py's watchdog polls these)."""

from __future__ import annotations

import os
import signal
import time

from torchlint.verify._reap import stat_table, stop_and_kill
from torchlint.verify._tree import allocated_bytes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional

INODE_LIMIT = 100_000  # files and directories in the temp dir (the private /dev/shm caps its own)


def resident(pid: str, page: int) -> int:
    with open(f"/proc/{pid}/statm", "rb") as fh:
        return int(fh.read().split()[1]) * page


def _process_table() -> dict[int, tuple[int, int, int]]:
    """pid -> (ppid, uid, threads) of every process we can see."""
    table: dict[int, tuple[int, int, int]] = {}
    for pid, fields in stat_table().items():
        try:
            table[pid] = (int(fields[1]), os.stat(f"/proc/{pid}").st_uid, int(fields[17]))
        except (OSError, IndexError, ValueError):
            continue
    return table


def sandbox_processes(root: int, uid: Optional[int],
                      table: Optional[dict[int, tuple[int, int, int]]] = None) -> list[int]:
    """The launcher `root`, everything below it (it is a child subreaper, so daemons and
    setsid() children stay below it) and, when the worker runs as a uid of its own, every
    process of that uid: the whole sandbox, however a process detached."""
    table = _process_table() if table is None else table
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found = {root} if root in table else set()
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    if uid is not None:
        found.update(pid for pid, (_, owner, _) in table.items() if owner == uid)
    return sorted(found)


def tree_usage(root: int, uid: Optional[int] = None) -> tuple[int, int]:
    """Resident bytes and tasks (threads) of every process of the sandbox. Shared pages
    count once per process: an overestimate, which errs on the side of the limit."""
    page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
    table = _process_table()
    total = tasks = 0
    for pid in sandbox_processes(root, uid, table):
        tasks += table[pid][2] if pid in table else 1
        try:
            total += resident(str(pid), page)
        except (OSError, IndexError, ValueError):
            continue
    return total, tasks


def _disk_used(top: str) -> tuple[int, int]:
    """Bytes allocated under `top` and its number of entries, however deep; a directory that
    cannot be read counts as over any limit (the worker may create one that hides what it
    holds)."""
    return allocated_bytes(top)


def over_disk(top: str, start: os.statvfs_result, limit: int) -> tuple[int, int]:
    """(0, 0), or what the temp dir holds (bytes, entries) once it is over `limit` bytes or
    INODE_LIMIT entries: empty files use no blocks but cost the kernel memory. The drop in
    free space and free inodes of its file system is the cheap test (others may write there
    too); the walk confirms it."""
    try:
        st = os.statvfs(top)
        grown = (start.f_bavail - st.f_bavail) * st.f_frsize
        made = start.f_favail - st.f_favail
        if grown <= limit and made <= INODE_LIMIT:
            return 0, 0
        used, entries = _disk_used(top)
    except OSError:
        return limit + 1, 0
    return (used, entries) if used > limit or entries > INODE_LIMIT else (0, 0)


def kill_sandbox(root: int, uid: Optional[int]) -> None:
    """Stop, then kill, every process of the sandbox until none is left (a stopped process
    cannot fork); the launcher last, so its subtree cannot escape to us meanwhile."""
    for _ in range(200):
        left = [p for p in sandbox_processes(root, uid) if p != root]
        if not left:
            break
        stop_and_kill(left)
        time.sleep(0.001)
    try:
        os.kill(root, signal.SIGKILL)
    except OSError:
        pass
