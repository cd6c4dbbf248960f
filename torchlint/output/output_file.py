"""`-o/--output-file`: write the report without following a link the checked tree planted.

CI runs `torchlint check -o torchlint.sarif` in the checkout, so the output path usually lies
in a tree that the pull request controls. A committed `torchlint.sarif -> ../runner_home/.bashrc`,
or a committed directory link `reports -> /somewhere` above the file, must not redirect the
write. Inside the working directory or the project root, every component of the path is
opened with O_NOFOLLOW, a symlink anywhere below that root is refused, and the report is
written to a fresh O_EXCL temporary file in the final directory, then renamed over the
name (rename replaces a link planted meanwhile; it never writes through one). A path
outside the project (`/tmp/report.sarif`, `/dev/stdout`) is the user's own choice and is
written as named."""

from __future__ import annotations

import errno
import os
import secrets
import stat
from pathlib import Path

from torchlint.safe_io import TEMP_PREFIX, TEMP_SUFFIX, replace_atomically

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional

_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_TMP_FLAGS = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
              | getattr(os, "O_BINARY", 0))


class OutputFileError(Exception):
    """Why the report was not written (the message names the path as the user gave it)."""


def write_report(path: str, text: str, roots: list[Path]) -> None:
    """Write `text` (UTF-8) to `path`; `roots`: the resolved working directory and project
    root, below which no symlink is followed."""
    data = text.encode("utf-8")
    parts = _parts_below_root(path, roots)
    if parts is None:
        with open(path, "wb") as fh:  # outside the project: the user's path, as named
            fh.write(data)
        return
    base, names = parts
    if not names or names[-1] in ("", ".", ".."):
        raise OutputFileError("is a directory")
    if os.open not in os.supports_dir_fd or not hasattr(os, "O_NOFOLLOW"):
        _write_without_dir_fd(base, names, data)
        return
    dir_fd = _open_parent(base, names[:-1])
    try:
        _replace_in(dir_fd, names[-1], data)
    finally:
        os.close(dir_fd)


def _parts_below_root(path: str, roots: list[Path]) -> Optional[tuple[str, list[str]]]:
    """(root, components below it) when `path` lies in one of `roots`; relative paths are
    always taken from the working directory (`roots[0]`); None for a path outside them."""
    if not os.path.isabs(path):
        return str(roots[0]), [p for p in Path(path).parts]
    absolute = os.path.normpath(path)
    for root in roots:
        prefix = str(root).rstrip(os.sep) + os.sep
        if absolute.startswith(prefix):
            return str(root), absolute[len(prefix):].split(os.sep)
    return None


def _open_parent(base: str, names: list[str]) -> int:
    fd = os.open(base, _DIR_FLAGS & ~getattr(os, "O_NOFOLLOW", 0))  # the root itself is trusted
    try:
        for i, name in enumerate(names):
            if name in ("", "."):
                continue
            try:
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(fd, name):
                    raise OutputFileError(f"{os.path.join(*names[:i + 1])} is a symbolic link; "
                                          f"the report is not written through it") from None
                raise
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _is_link(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(name, dir_fd=dir_fd).st_mode)
    except OSError:
        return False


def _replace_in(dir_fd: int, name: str, data: bytes) -> None:
    mode = 0o666 & ~_umask()  # a new file gets what open() would give it
    try:
        st = os.lstat(name, dir_fd=dir_fd)
    except FileNotFoundError:
        st = None
    if st is not None:
        if stat.S_ISLNK(st.st_mode):
            raise OutputFileError("is a symbolic link; not overwritten (remove it or choose another file)")
        if stat.S_ISDIR(st.st_mode):
            raise OutputFileError("is a directory")
        if stat.S_ISREG(st.st_mode):
            mode = stat.S_IMODE(st.st_mode)
    tmp = f"{TEMP_PREFIX}{os.getpid()}-{secrets.token_hex(6)}{TEMP_SUFFIX}"  # the name a later sweep knows
    fd = os.open(tmp, _TMP_FLAGS, 0o600, dir_fd=dir_fd)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fchmod(fd, mode)
        finally:
            os.close(fd)
        os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass
        raise


def _umask() -> int:
    current = os.umask(0o022)
    os.umask(current)
    return current


def _write_without_dir_fd(base: str, names: list[str], data: bytes) -> None:
    """Platforms without dir_fd (Windows): check each component, then replace atomically."""
    current = base
    for i, name in enumerate(names):
        current = os.path.join(current, name)
        if os.path.islink(current):
            what = "is a symbolic link; not overwritten" if i == len(names) - 1 else \
                f"{os.path.join(*names[:i + 1])} is a symbolic link; the report is not written through it"
            raise OutputFileError(what)
    if os.path.isdir(current):
        raise OutputFileError("is a directory")
    replace_atomically(current, data)
