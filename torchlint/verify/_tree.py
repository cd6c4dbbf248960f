"""Directory trees that the checked code wrote (stdlib only: the fork server loads it by
path). Such a tree may be thousands of levels deep, deeper than Python's recursion limit
(shutil.rmtree and os.walk recurse per level in Python 3.11) and than PATH_MAX, so these
walk it iteratively, one directory file descriptor at a time, relative to its parent."""

from __future__ import annotations

import os
import stat

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable, Optional

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _scan(fd: int, on_file: Callable[[int, str, os.stat_result], None]) -> list[str]:
    """Visit the files of one directory; return its subdirectories' names."""
    subdirs = []
    with os.scandir(fd) as entries:
        for entry in entries:
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                subdirs.append(entry.name)
            else:
                on_file(fd, entry.name, st)
    return subdirs


def visit(top: str, on_file: Callable[[int, str, os.stat_result], None],
          on_dir_done: Optional[Callable[[int, str], None]] = None) -> None:
    """Depth-first over `top` without recursion: `on_file(dir_fd, name, lstat)` for every
    non-directory, `on_dir_done(parent_fd, name)` for every directory once its contents were
    visited (`top` itself is not passed). Only one directory is open at a time; the way
    back up is `..`, so nothing may move the tree meanwhile (every writer is dead by then).
    Raises OSError where a directory cannot be read."""
    fd = os.open(top, _DIR_FLAGS)
    levels: list[tuple[list[str], str]] = []
    try:
        levels.append((_scan(fd, on_file), ""))
        while True:
            pending, name = levels[-1]
            if pending:
                sub = pending.pop()
                try:
                    child = os.open(sub, _DIR_FLAGS, dir_fd=fd)
                except PermissionError:  # a directory its writer closed (mode 0300): open it up
                    os.chmod(sub, 0o700, dir_fd=fd)
                    child = os.open(sub, _DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = child
                levels.append((_scan(fd, on_file), sub))
                continue
            if len(levels) == 1:
                return
            parent = os.open("..", _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = parent
            levels.pop()
            if on_dir_done is not None:
                on_dir_done(fd, name)
    finally:
        os.close(fd)


def empty(top: str) -> None:
    """Delete everything below `top`, however deep, keeping `top`. Raises OSError on failure."""
    visit(top, lambda fd, name, _: os.unlink(name, dir_fd=fd), lambda fd, name: os.rmdir(name, dir_fd=fd))


def remove(top: str) -> None:
    """Delete `top` and everything below it, however deep. Raises OSError on failure."""
    empty(top)
    os.rmdir(top)


def allocated_bytes(top: str) -> tuple[int, int]:
    """(bytes allocated, entries) below `top`."""
    total = entries = 0

    def add(_fd: int, _name: str, st: os.stat_result) -> None:
        nonlocal total, entries
        total += st.st_blocks * 512
        entries += 1

    def count(_fd: int, _name: str) -> None:
        nonlocal entries
        entries += 1

    visit(top, add, count)
    return total, entries


def chown_all(top: str, uid: int, gid: int) -> None:
    """Take back what another uid wrote below `top` (best effort, symlinks not followed)."""
    def take(fd: int, name: str, _: object = None) -> None:
        try:
            os.chown(name, uid, gid, dir_fd=fd, follow_symlinks=False)
        except OSError:
            pass

    visit(top, take, take)
