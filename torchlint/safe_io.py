"""Reading files that an untrusted checkout controls, without hanging, exhausting memory
or leaking what lies outside it.

A pull request can commit a symlink to `/proc/self/environ` or `~/.git-credentials`, a
FIFO named `x.py`, or a link to `/dev/zero`. Only regular files are read, never anything
under the kernel's pseudo file systems, and never more than a size cap."""

from __future__ import annotations

import os
import re
import stat
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable, Iterable, Optional, Union

# Pseudo file systems whose "regular" files report size 0 and hold process secrets.
_PSEUDO_ROOTS = ("/proc", "/sys", "/dev")
DEFAULT_MAX_FILE_SIZE = 5 * 1024 * 1024


class RefusedFile(Exception):
    """A path torchlint will not read; the message says why, without naming a link's target."""


def is_within(path: str, roots: Iterable[str]) -> bool:
    """`path` (already resolved) equals or lies below one of the resolved `roots`."""
    for root in roots:
        if path == root or path.startswith(root.rstrip(os.sep) + os.sep):
            return True
    return False


def refusal(path: str, roots: Iterable[str] = ()) -> str | None:
    """Why `path` must not be read as a source file, or None. `roots`: resolved directories
    a symlink may point into (empty: any target that is a regular file)."""
    try:
        st = os.lstat(path)
    except OSError:
        return None  # missing or unreadable: the reader reports it
    if stat.S_ISLNK(st.st_mode):
        target = os.path.realpath(path)
        if is_within(target, _PSEUDO_ROOTS):
            return "symlink to a system file"
        roots = list(roots)
        if roots and not is_within(target, roots):
            return "symlink that points outside the checked paths"
        try:
            st = os.stat(path)
        except OSError:
            return "dangling symlink"
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    if is_within(os.path.abspath(path), _PSEUDO_ROOTS):
        return "system file"
    return None


def read_regular_file(path: str, max_bytes: int, follow_symlinks: bool = True) -> bytes:
    """The bytes of a regular file of at most `max_bytes`. Raises RefusedFile for anything
    else (FIFO, device, directory, /proc, too large; a symlink when not `follow_symlinks`)
    and OSError when it cannot be opened. O_NONBLOCK keeps a FIFO swapped in after the
    check from blocking the open; O_NOFOLLOW makes the no-symlink promise atomic."""
    if not follow_symlinks and os.path.islink(path):
        raise RefusedFile("symlink")
    reason = refusal(path)
    if reason is not None:
        raise RefusedFile(reason)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    if not follow_symlinks:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise RefusedFile("not a regular file")
        if st.st_size > max_bytes:
            raise RefusedFile(too_large_message(st.st_size, max_bytes))
        # One byte more tells a file that grew past the cap; the stat sizes the first read.
        data = read_fd(fd, max_bytes + 1, st.st_size + 1)
        if len(data) > max_bytes:
            raise RefusedFile(too_large_message(len(data), max_bytes))
        return data
    finally:
        os.close(fd)


def read_fd(fd: int, limit: int, expected: int = 1 << 16) -> bytes:
    """At most `limit` bytes from the current offset of `fd`, in bounded reads, the first of
    `expected` bytes. (Each read allocates what it asks for: 1 MB reads of 4 kB files were a
    third of a warm run's time.)"""
    chunks, left, ask = [], limit, max(expected, 1)
    while left > 0:
        chunk = os.read(fd, min(left, ask, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
        ask = 1 << 16
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


# Temp files carry the writer's pid: a run killed between the write and the rename leaves
# one behind, and the next write into that directory removes it once that pid is gone.
TEMP_PREFIX = ".torchlint-"
TEMP_SUFFIX = ".tmp"
_TEMP_NAME = r"\.torchlint-(\d+)-[A-Za-z0-9_]+\.tmp\Z"  # compiled when first used (by `re`)
STALE_TEMP_SECONDS = 300  # a pid can be reused (or live in another PID namespace): also wait
_swept: set[str] = set()


def sweep_stale_temps(directory: str) -> None:
    """Remove temp files that a dead torchlint process left in `directory` (once per run)."""
    directory = os.path.abspath(directory or ".")
    if directory in _swept or os.name != "posix":  # os.kill(pid, 0) would end a process on Windows
        return
    _swept.add(directory)
    try:
        names = [n for n in os.listdir(directory) if n.startswith(TEMP_PREFIX)]
    except OSError:
        return
    now = time.time()
    for name in names:
        match = re.match(_TEMP_NAME, name)
        if match is None or int(match[1]) == os.getpid() or _pid_alive(int(match[1])):
            continue
        path = os.path.join(directory, name)
        try:
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid() and now - st.st_mtime > STALE_TEMP_SECONDS:
                os.unlink(path)
        except OSError:
            pass


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # gone, or no pid at all (a name the tree chose)
        return False
    except OSError:
        return True  # exists, owned by someone else
    return True


def replace_atomically(path: str, data: Union[bytes, Iterable[bytes]], mode: Optional[int] = None, durable: bool = False,
                       owner: Optional[tuple[int, int]] = None,
                       before_replace: Optional[Callable[[], None]] = None) -> None:
    """Write `data` to a temporary file beside `path`, then os.replace it over `path`: readers
    see the old or the new content, never a torn one, and a symlink at `path` is replaced
    itself, never followed. `durable` fsyncs first (user files, not caches); `owner` is the
    (uid, gid) the new file gets; `before_replace` runs last and may raise to cancel. `data` may
    come in pieces, written one after another."""
    directory = os.path.dirname(path) or "."
    sweep_stale_temps(directory)
    import tempfile  # only when writing: a lint run does not pay for it

    fd, tmp = tempfile.mkstemp(prefix=f"{TEMP_PREFIX}{os.getpid()}-", suffix=TEMP_SUFFIX, dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            if isinstance(data, bytes):
                fh.write(data)
            else:  # pieces: a large file is never held whole (the cache index)
                fh.writelines(data)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        if owner is not None:
            made = os.stat(tmp)
            if (made.st_uid, made.st_gid) != owner:
                os.chown(tmp, *owner)  # before chmod: chown clears setuid/setgid bits
        if mode is not None:
            os.chmod(tmp, mode)
        if before_replace is not None:
            before_replace()
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def replace_exclusively(path: str, data: bytes, mode: int) -> None:
    """`replace_atomically` for the start-up path (the lint cache's entries, the code bundle):
    no `tempfile` import and no directory sweep, since a one-file run writes one file. The
    temporary name is random and created exclusively, never following a link: a FIFO, a device
    or a hard link planted at a guessable name is never opened. Nothing is left behind on a
    failure or ^C; raises OSError."""
    temporary = f"{path}.{os.getpid()}.{os.urandom(6).hex()}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), mode)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(temporary, path)  # readers see the old file or the new one, never half
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def too_large_message(size: int, max_bytes: int) -> str:
    return (f"file is larger than max-file-size ({format_size(max_bytes)}); not linted "
            f"(raise `max-file-size` to check it)") if size > max_bytes else ""


def format_size(n: int) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n} bytes"


def parse_size(value: object) -> int:
    """`max-file-size`: an integer number of bytes, or a string like "5MB", "512 KiB"."""
    if isinstance(value, bool):
        raise ValueError("expected a size like 5MB or a number of bytes")
    if isinstance(value, int):
        if value <= 0:
            raise ValueError("must be positive")
        return value
    if not isinstance(value, str):
        raise ValueError("expected a size like 5MB or a number of bytes")
    text = value.strip().upper().replace(" ", "")
    units = {"KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30, "KB": 1000, "MB": 1000**2, "GB": 1000**3,
             "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "B": 1}
    for suffix, scale in units.items():
        if text.endswith(suffix):
            number = text[: -len(suffix)]
            break
    else:
        number, scale = text, 1
    try:
        size = float(number)
    except ValueError:
        raise ValueError(f"cannot read {value!r} as a size; use e.g. 5MB or 5242880") from None
    if not (size > 0) or size == float("inf"):
        raise ValueError(f"{value!r}: a size must be a positive, finite number")
    return int(size * scale)


# C0 and C1 control characters (tab excepted), DEL, and the line/paragraph separators a
# terminal or a line-based reader may act on. ESC starts ANSI/OSC sequences (erase line,
# window title, OSC 52 clipboard writes).
_UNPRINTABLE = {c: f"\\x{c:02x}" for c in (*range(0x00, 0x09), *range(0x0a, 0x20), 0x7f, *range(0x80, 0xa0))}
# Every bidirectional formatting control too: embeddings, overrides, isolates and the marks
# (Trojan Source, CVE-2021-42574) can make a printed line read unlike its bytes.
_UNPRINTABLE.update({c: f"\\u{c:04x}" for c in (0x2028, 0x2029, 0x061c, 0x200e, 0x200f, *range(0x202a, 0x202f),
                                               *range(0x2066, 0x206a))})


def printable(text: str) -> str:
    """`text` with control characters escaped, safe to print on a terminal or one line of a
    report. Surrogate escapes (undecodable bytes of a file name) become `\\xNN`."""
    if text.isprintable() and text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return text.translate(_UNPRINTABLE)


def display_path(path: str | os.PathLike[str], cwd: str | os.PathLike[str]) -> str:
    """The path as reports show it: relative to cwd when below it, with control characters
    and undecodable bytes escaped so a file name cannot forge an output line."""
    absolute = os.path.abspath(path)
    prefix = str(cwd) + os.sep
    if absolute.startswith(prefix):
        return printable(absolute[len(prefix):].replace(os.sep, "/"))
    return printable(str(path))
