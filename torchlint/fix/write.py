"""Writing a fixed file back without corrupting or dropping anything.

- The file on disk must still hold the bytes the fixes were computed on (a concurrent run
  or an editor's save in between makes the file skipped, not overwritten with stale fixes);
  an flock on the file serializes torchlint runs from that check to the replacement.
- A file the user may not write is not written (the atomic rename would bypass its mode);
  root, which may write anything, still leaves alone a file with no write bit at all.
- Mode bits and ownership are kept. Where the replacement cannot get the file's owner
  (a non-root user writing someone else's group-writable file), where the file has more
  than one hard link (a rename would break the link), or where the directory takes no new
  files, the file is written in place instead: space is reserved first, so a full disk
  fails before the first byte changes.
"""

from __future__ import annotations

import errno
import os
import stat
import time

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

from torchlint.safe_io import read_fd, replace_atomically


class FixSkipped(Exception):
    """The file was not written, and why (read-only, changed on disk, not a regular file)."""


LOCK_WAIT_SECONDS = 10
CHANGED = "the file changed on disk while it was being fixed (another run or an editor); not written, run again"


def write_fixed(path: str, expected: bytes, data: bytes) -> None:
    """Replace the content of `path` (a symlink's target) by `data`, provided it still holds
    `expected`. Raises FixSkipped when it must not be written, OSError when writing failed
    (the file then still holds `expected`)."""
    target = os.path.realpath(path)
    try:
        st = os.stat(target)
    except FileNotFoundError:  # deleted or moved away meanwhile
        raise FixSkipped(CHANGED) from None
    if not stat.S_ISREG(st.st_mode):
        raise FixSkipped("not a regular file; not written")
    if not _may_write(target, st):
        mode = stat.S_IMODE(st.st_mode)
        why = "the file is read-only" if not mode & 0o222 else "this user may not write the file"
        raise FixSkipped(f"{why} (mode {mode:04o}); not fixed")
    lock = _lock(target)
    try:
        _write(target, st, expected, data)
    finally:
        os.close(lock)


def _write(target: str, st: os.stat_result, expected: bytes, data: bytes) -> None:
    owner = (st.st_uid, st.st_gid) if hasattr(os, "geteuid") else None  # None: no POSIX owners
    if st.st_nlink > 1 or (owner is not None and not _can_give(owner)):
        _write_in_place(target, st, expected, data)
        return
    try:
        replace_atomically(target, data, mode=stat.S_IMODE(st.st_mode), durable=True, owner=owner,
                           before_replace=lambda: _check_unchanged(target, st, expected))
    except PermissionError:
        if not os.access(os.path.dirname(target) or ".", os.W_OK):
            _write_in_place(target, st, expected, data)  # a writable file in a closed directory
            return
        raise


def _lock(target: str) -> int:
    """An exclusive flock on the file's inode, held from the check to the replacement: two
    torchlint runs cannot both pass the check before either replaces the file (the second
    then finds a new inode and skips). Editors take no such lock; for them the re-read just
    before the rename leaves a window of microseconds instead of the whole fix."""
    fd = _open(target, os.O_RDONLY)
    if fcntl is None:
        return fd
    deadline = time.monotonic() + LOCK_WAIT_SECONDS
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() > deadline:
                os.close(fd)
                raise FixSkipped("another process holds a lock on the file; not written, run again") from None
            time.sleep(0.05)
        except OSError:
            return fd  # a file system without flock: the re-read check still holds


def _may_write(target: str, st: os.stat_result) -> bool:
    """Whether the user may write the file itself, as open() would judge it; for root, whether
    anyone may (root's access() is always true)."""
    if not st.st_mode & 0o222:
        return False
    if os.access in os.supports_effective_ids:
        return os.access(target, os.W_OK, effective_ids=True)
    return os.access(target, os.W_OK)


def _can_give(owner: tuple[int, int]) -> bool:
    """Whether a new file can be chowned to `owner`: root can; others only to themselves and
    a group they belong to."""
    if os.geteuid() == 0:
        return True
    return owner[0] == os.geteuid() and (owner[1] == os.getegid() or owner[1] in os.getgroups())


def _read_all(fd: int, limit: int) -> bytes:
    os.lseek(fd, 0, os.SEEK_SET)
    return read_fd(fd, limit)


def _check_unchanged(target: str, st: os.stat_result, expected: bytes) -> None:
    fd = _open(target, os.O_RDONLY)
    try:
        _check_fd(fd, st, expected)
    finally:
        os.close(fd)


def _open(target: str, mode: int) -> int:
    try:
        return os.open(target, mode | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
                       | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        raise FixSkipped(CHANGED) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # the target was swapped for a symlink
            raise FixSkipped(CHANGED) from None
        raise


def _check_fd(fd: int, st: os.stat_result, expected: bytes) -> None:
    now = os.fstat(fd)
    if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino) or not stat.S_ISREG(now.st_mode):
        raise FixSkipped(CHANGED)
    if now.st_size != len(expected) or _read_all(fd, len(expected) + 1) != expected:
        raise FixSkipped(CHANGED)


def _write_in_place(target: str, st: os.stat_result, expected: bytes, data: bytes) -> None:
    """Overwrite the file through its own inode: hard links, owner and mode stay as they are."""
    fd = _open(target, os.O_RDWR)
    try:
        _check_fd(fd, st, expected)
        _reserve(fd, len(data))
        try:
            _write_all(fd, data)
            os.ftruncate(fd, len(data))
            os.fsync(fd)
        except OSError:
            _restore(fd, expected)
            raise
    finally:
        os.close(fd)


def _reserve(fd: int, size: int) -> None:
    """Allocate the blocks the new content needs before overwriting anything."""
    fallocate = getattr(os, "posix_fallocate", None)
    if fallocate is None:
        return
    try:
        fallocate(fd, 0, size)
    except OSError as exc:
        if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
            raise  # ENOSPC, EFBIG: nothing was changed yet


def _write_all(fd: int, data: bytes) -> None:
    os.lseek(fd, 0, os.SEEK_SET)
    view, offset = memoryview(data), 0
    while offset < len(data):
        offset += os.write(fd, view[offset:])


def _restore(fd: int, expected: bytes) -> None:
    """Best effort after a failed in-place write: put the original bytes back."""
    try:
        _write_all(fd, expected)
        os.ftruncate(fd, len(expected))
    except OSError:
        pass
