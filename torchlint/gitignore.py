"""`.gitignore` files outside a git work tree (an unpacked sdist, a copied directory, a tree
whose git is missing), read as git would with `pathspec`, as ruff does there (its walker
does not require git). Inside a work tree git itself answers (files._git_visible_files).

Each directory's `.gitignore` applies to its subtree, a deeper file's verdict wins, and a
negation (`!keep.py`) re-includes. The files of the walked directory's parents up to the
working directory count too. A `.gitignore` that is not a small regular file is ignored."""

from __future__ import annotations

import os

from torchlint.safe_io import RefusedFile, read_regular_file

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional

MAX_GITIGNORE_BYTES = 1024 * 1024
if TYPE_CHECKING:
    Spec = tuple[str, Any]  # (the directory of the .gitignore, its compiled pathspec.GitIgnoreSpec)


def _load(directory: str) -> Optional[Spec]:
    path = os.path.join(directory, ".gitignore")
    if not os.path.isfile(path):
        return None
    try:
        text = read_regular_file(path, MAX_GITIGNORE_BYTES).decode("utf-8", "replace")
    except (RefusedFile, OSError):
        return None
    import pathspec

    return directory, pathspec.GitIgnoreSpec.from_lines(text.splitlines())


class GitignoreFiles:
    """The `.gitignore` specs in force in each directory of one walk."""

    def __init__(self, top: str, cwd: str) -> None:
        top_abs, cwd_abs = os.path.abspath(top), os.path.abspath(cwd)
        chain = [top_abs]
        if top_abs.startswith(cwd_abs + os.sep):  # the parents up to the working directory
            parent = os.path.dirname(top_abs)
            while len(parent) >= len(cwd_abs):
                chain.append(parent)
                parent = os.path.dirname(parent)
        specs = [spec for spec in (_load(d) for d in reversed(chain)) if spec is not None]
        self._by_dir: dict[str, list[Spec]] = {top_abs: specs}

    def enter(self, directory: str, parent: Optional[str]) -> None:
        """Called for each directory of the walk below the top, after its parent."""
        directory = os.path.abspath(directory)
        if directory in self._by_dir:
            return
        inherited = self._by_dir.get(os.path.abspath(parent), []) if parent else []
        own = _load(directory)
        self._by_dir[directory] = [*inherited, own] if own is not None else inherited

    def ignored(self, directory: str, name: str, is_dir: bool) -> bool:
        """Whether `directory/name` is ignored (the deepest .gitignore that decides wins)."""
        full = os.path.join(os.path.abspath(directory), name)
        for base, spec in reversed(self._by_dir.get(os.path.abspath(directory), [])):
            rel = os.path.relpath(full, base).replace(os.sep, "/") + ("/" if is_dir else "")
            include = spec.check_file(rel).include
            if include is not None:
                return bool(include)
        return False


class _NothingIgnored(GitignoreFiles):
    """Inside a work tree (git answered) or with respect-gitignore off."""

    def __init__(self) -> None:
        self._by_dir = {}

    def enter(self, directory: str, parent: Optional[str]) -> None:
        return None

    def ignored(self, directory: str, name: str, is_dir: bool) -> bool:
        return False


NOTHING_IGNORED: GitignoreFiles = _NothingIgnored()


def available() -> bool:
    try:
        import pathspec  # noqa: F401
    except ImportError:  # an environment installed before torchlint required it
        return False
    return True
