"""Whether git may track files under a directory, answered from `.git/index` without
starting git (a process start and `subprocess`'s import are ~5 ms of a one-file check).

Only the answer "certainly not" is taken from here: in an index of version 2 or 3 every
entry's path is stored whole, so a directory none of whose bytes appear as `rel/` holds no
tracked file. Anything this module does not read plainly (a worktree or submodule `.git`
file, a split or version-4 index, a `core.worktree`, a GIT_DIR or GIT_INDEX_FILE...)
answers "maybe", and the caller asks git itself, as before."""

from __future__ import annotations

import os
import stat
import sys
from typing import Optional

_RELOCATING = frozenset({"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR"})
_PLAIN_VERSIONS = (b"\0\0\0\x02", b"\0\0\0\x03")
_FOLDS_CASE = sys.platform in ("darwin", "win32")  # the index may spell the directory in another case


def maybe_tracked(directory: str) -> bool:
    """False when the index of the repository holding `directory` lists no file under it."""
    if any(name in _RELOCATING or name.startswith("GIT_CONFIG") for name in os.environ):
        return True  # git would look at another index or work tree than the one found here
    real = os.path.realpath(directory)
    top = _work_tree(real)
    if top is None:
        return False  # in no repository: git tracks nothing here
    if top == "":
        return True
    git_dir = os.path.join(top, ".git")
    rel = os.path.relpath(real, top)
    if rel == "." or rel.split(os.sep)[0] == ".git":
        return rel == "."  # the whole tree may be; inside .git, nothing is
    try:
        if any(name.startswith("sharedindex.") for name in os.listdir(git_dir)):
            return True  # a split index: entries live in another file
        with open(os.path.join(git_dir, "config"), "rb") as config:
            if b"worktree" in config.read(1 << 20).lower():
                return True
    except FileNotFoundError:
        pass
    except OSError:
        return True
    try:
        with open(os.path.join(git_dir, "index"), "rb") as index:
            data = index.read()
    except FileNotFoundError:
        return False  # a repository with nothing added yet
    except OSError:
        return True
    if data[:4] != b"DIRC" or data[4:8] not in _PLAIN_VERSIONS:
        return True
    needle = (rel.replace(os.sep, "/") + "/").encode("utf-8", "surrogateescape")
    return needle in data or (_FOLDS_CASE and needle.lower() in data.lower())


def _work_tree(directory: str) -> Optional[str]:
    """The nearest directory at or above `directory` holding a `.git` directory; None when
    there is none; "" when a `.git` is not a plain directory (a worktree, a submodule) or
    cannot be read."""
    current = directory
    while True:
        try:
            mode = os.lstat(os.path.join(current, ".git")).st_mode
        except FileNotFoundError:
            mode = None
        except OSError:
            return ""
        if mode is not None:
            return current if stat.S_ISDIR(mode) else ""
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent
