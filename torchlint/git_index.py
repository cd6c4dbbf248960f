"""Whether git may track files under a directory, answered from `.git/index` without
starting git (a process start and `subprocess`'s import are ~5 ms of a one-file check).

Only the answer "certainly not" is taken from here, and only for the plain layout: a work
tree whose `.git` is a valid repository directory with nothing that moves git's view (no
`commondir`, no `core.worktree` or worktree config, no includes, no split or sparse index,
no GIT_DIR-like variables), and nothing else on the way up to `/` that git could take for a
repository (another `.git`, a `HEAD`): which of several candidates git uses is its call. In an index of version 2 or 3 every entry's path is stored whole, so a directory
whose path (relative to the work tree) appears nowhere in the index holds no tracked file,
nor is it a submodule entry. Anything else answers "maybe", and the caller asks git itself.
The checked tree may ship its own `.git` (a tarball): every doubt goes to git."""

from __future__ import annotations

import os
import stat
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional

_RELOCATING = frozenset({"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY"})
_PLAIN_VERSIONS = (b"\0\0\0\x02", b"\0\0\0\x03")
_FOLDS_CASE = sys.platform in ("darwin", "win32")  # the index may spell the directory in another case
_MAX_CONFIG = 1 << 20
# Config that changes which work tree or index git uses, or pulls in settings from elsewhere.
_MOVING_CONFIG = (b"worktree", b"include", b"sparse", b"split")
# Files of a git directory that make its index or config not the plain ones read here.
_MOVING_FILES = ("commondir", "config.worktree", "sharedindex.", "gitdir")


def maybe_tracked(directory: str) -> bool:
    """False when git certainly tracks no file under `directory` (see the module's doc)."""
    if any(name in _RELOCATING or name.startswith("GIT_CONFIG") for name in os.environ):
        return True  # git would look at another index or work tree than the one found here
    real = os.path.realpath(directory)
    top = _work_tree(real)
    if top is None:
        return False  # in no repository: git tracks nothing here
    if top == "":
        return True
    rel = os.path.relpath(real, top)
    if rel == "." or rel.split(os.sep)[0] == ".git":
        return True  # the whole tree, or git's own directory: git decides
    data = _plain_index(os.path.join(top, ".git"))
    if data is None:
        return True
    if not data:
        return False  # a repository with nothing added yet
    if not rel.isascii():
        return True  # the index may hold another normalization of the name (macOS: NFC against NFD)
    needle = rel.replace(os.sep, "/").encode("ascii")
    return needle in data or (_FOLDS_CASE and needle.lower() in data.lower())


def _plain_index(git_dir: str) -> Optional[bytes]:
    """The bytes of a plain repository's index (b"" when it has none), or None when the
    repository is not one this module reads plainly."""
    try:
        names = os.listdir(git_dir)
        if any(name.startswith(_MOVING_FILES) for name in names):
            return None
        if "config" in names:
            with open(os.path.join(git_dir, "config"), "rb") as config:
                text = config.read(_MAX_CONFIG + 1).lower()
            if len(text) > _MAX_CONFIG or any(word in text for word in _MOVING_CONFIG):
                return None
        if "index" not in names:
            return b""
        with open(os.path.join(git_dir, "index"), "rb") as index:
            data = index.read()
    except OSError:
        return None
    if data[:4] != b"DIRC" or data[4:8] not in _PLAIN_VERSIONS or b"sdir" in data:
        return None  # another format, or a sparse index (its directory entries stand for files)
    return data


def _work_tree(directory: str) -> Optional[str]:
    """The directory holding the one repository at or above `directory`; None when nothing
    there could be a repository; "" when the answer is not plain: more than one candidate
    (git may skip one it finds invalid and use another, so which one it reads is git's
    call), a `.git` that is not a directory, one that is not plainly valid, a directory with
    a `HEAD` of its own (git may take it for a bare repository), an unreadable one."""
    found: list[str] = []
    current = directory
    while True:
        for name in (".git", "HEAD"):
            try:
                os.lstat(os.path.join(current, name))
            except FileNotFoundError:
                continue
            except OSError:
                return ""
            found.append(os.path.join(current, name))
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    if not found:
        return None
    if len(found) > 1 or os.path.basename(found[0]) != ".git" or not _valid_git_dir(found[0]):
        return ""
    return os.path.dirname(found[0])


def _valid_git_dir(path: str) -> bool:
    """A repository directory in its plainest form: a directory (not a link) whose HEAD is a
    regular file reading `ref: refs/...` or a commit id, with objects/ and refs/ directories."""
    try:
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            return False
        head = os.path.join(path, "HEAD")
        if not stat.S_ISREG(os.lstat(head).st_mode):
            return False
        for name in ("objects", "refs"):
            if not stat.S_ISDIR(os.lstat(os.path.join(path, name)).st_mode):
                return False
        with open(head, "rb") as file:
            text = file.read(256)
    except OSError:
        return False
    if not text.endswith(b"\n"):
        return False
    text = text[:-1]
    return (text.startswith(b"ref: refs/") and b"\n" not in text) or (
        len(text) in (40, 64) and all(c in b"0123456789abcdef" for c in text))
