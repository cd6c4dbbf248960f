"""Whether git may track files under a directory, answered from `.git/index` without
starting git (a process start and `subprocess`'s import are ~5 ms of a one-file check).

Only the answer "certainly not" is taken from here, and only for the plain layout: a work
tree whose `.git` is a valid repository directory with nothing that moves git's view (no
`commondir`, no `core.worktree` or worktree config, no includes, no split or sparse index,
no GIT_DIR-like variables), and no directory on the way up that git could take for a bare
repository. In an index of version 2 or 3 every entry's path is stored whole, so a directory
whose path (relative to the work tree) appears nowhere in the index holds no tracked file,
nor is it a submodule entry. Anything else answers "maybe", and the caller asks git itself.
The checked tree may ship its own `.git` (a tarball): every doubt goes to git."""

from __future__ import annotations

import os
import stat
import sys
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
    needle = rel.replace(os.sep, "/").encode("utf-8", "surrogateescape")
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
    """The nearest directory at or above `directory` holding a valid `.git` directory; None
    when there is none and nothing git could take for a repository; "" when something on
    the way is not plain: a `.git` file (a worktree, a submodule), a `.git` directory git
    may skip as invalid, a directory laid out like a bare repository, an unreadable one."""
    current = directory
    while True:
        dot_git = os.path.join(current, ".git")
        try:
            mode: Optional[int] = os.lstat(dot_git).st_mode
        except FileNotFoundError:
            mode = None
        except OSError:
            return ""
        if mode is not None:
            return current if stat.S_ISDIR(mode) and _valid_git_dir(dot_git) else ""
        if _looks_like_git_dir(current):
            return ""  # git would take it for a bare repository (perhaps with a core.worktree)
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def _valid_git_dir(path: str) -> bool:
    """What git asks of a repository directory: HEAD naming a ref or a commit, objects/, refs/."""
    try:
        if not (os.path.isdir(os.path.join(path, "objects")) and os.path.isdir(os.path.join(path, "refs"))):
            return False
        with open(os.path.join(path, "HEAD"), "rb") as head:
            text = head.read(256).strip()
    except OSError:
        return False
    return text.startswith(b"ref: refs/") or (len(text) in (40, 64) and all(c in b"0123456789abcdef" for c in text))


def _looks_like_git_dir(path: str) -> bool:
    return all(os.path.exists(os.path.join(path, name)) for name in ("HEAD", "objects", "refs"))
