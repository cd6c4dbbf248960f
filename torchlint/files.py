"""File discovery: expand the paths given on the command line into Python files,
skipping excluded directories and, by default, what .gitignore ignores."""

from __future__ import annotations

import os
from functools import lru_cache

from torchlint.config import ConfigResolver, Settings
from torchlint.gitignore import NOTHING_IGNORED, GitignoreFiles, available as gitignore_available
from torchlint.safe_io import display_path as display_path  # re-exported: reports locate files with it
from torchlint.safe_io import is_within, refusal
from torchlint.source import NOTEBOOK_SUFFIX

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Callable, Iterator, Optional, Union

# Notebooks are discovered like Python files (ruff's default `extend-include` of *.ipynb).
PYTHON_SUFFIXES = (".py", ".pyi", NOTEBOOK_SUFFIX)

def _git_visible_files(directory: str) -> Optional[set[str]]:
    """Absolute paths of files under `directory` that git does not ignore (tracked and
    untracked); None when the directory is not in a git work tree, git is missing, or the
    directory itself is ignored (a path the user names explicitly is linted, like ruff)."""
    from torchlint.git import run_git  # subprocess, only when a directory is walked

    ignored = run_git(directory, "check-ignore", "-q", ".")
    if ignored is None or ignored.returncode == 0:
        return None
    proc = run_git(directory, "ls-files", "-z", "--cached", "--others", "--exclude-standard", ".")
    if proc is None or proc.returncode != 0:
        return None
    # Paths come relative to `directory`; join them the way the walk spells its paths.
    base = os.path.abspath(directory)
    return {os.path.normpath(os.path.join(base, p))
            for p in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if p}


def _gitignore_files(top: str) -> Optional[GitignoreFiles]:
    """The .gitignore files' verdicts where git gave none: outside a work tree (or without
    git). Not for a directory git itself ignores, which the user named on purpose."""
    from torchlint.git import run_git

    proc = run_git(top, "rev-parse", "--is-inside-work-tree")
    if proc is not None and proc.returncode == 0 or not gitignore_available():
        return None
    return GitignoreFiles(top, os.getcwd())


def spelled(raw: str) -> str:
    """`raw` as `str(Path(raw))` spells it, without importing pathlib: no `.` components, no
    repeated or trailing separator (`./a//b.py` -> `a/b.py`); `..` is kept, as pathlib keeps it."""
    if os.sep != "/":  # pragma: no cover - Windows spellings (drives, both slashes) are pathlib's
        from pathlib import Path

        return str(Path(raw))
    head = "//" if raw.startswith("//") and not raw.startswith("///") else "/" if raw.startswith("/") else ""
    return head + "/".join(part for part in raw.split("/") if part and part != ".") or "."


def _join(directory: str, name: str) -> str:
    """A walked entry's path, spelled as `spelled` spells it (`directory` is spelled already)."""
    return name if directory == "." else f"{directory}/{name}" if directory != "/" else f"/{name}"


OUTSIDE_LINK = "symlink that points outside the project (name the resolved path to check it)"


def link_outside(raw: str, project: Union[list[str], Callable[[], list[str]]]) -> bool:
    """Whether the path named on the command line reaches outside the `project` directories
    (resolved; or a callable giving them, asked only for a symlinked spelling) only through a
    symlink in its spelling. A path the user spells out resolved is taken as meant: the
    refusal stops a committed link, not the user."""
    real = os.path.realpath(raw)
    return real != os.path.abspath(raw) and not is_within(real, project() if callable(project) else project)


@lru_cache(maxsize=256)
def work_tree(directory: str) -> Optional[str]:
    """The nearest directory at or above `directory` that holds a `.git` (a repository or a
    worktree's link file), without running git; None outside any."""
    current = directory
    while True:
        if os.path.lexists(os.path.join(current, ".git")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


class Discovery:
    def __init__(self, resolver: ConfigResolver, force_exclude: bool = False,
                 project_root: Union[str, Path, Callable[[], Path], None] = None) -> None:
        self.resolver = resolver
        self.force_exclude = force_exclude
        self.missing: list[str] = []
        self.skipped: list[tuple[str, str]] = []  # (path, why): special files, outside links
        # Resolved directories a symlink may point into: the directories named on the
        # command line, the parents of the files named there, and the working directory.
        self.roots: list[str] = [os.path.realpath(".")]
        # Where a symlinked path named on the command line may lead: the working directory
        # and the project (git) root. A callable root is asked when a path is a symlink
        # (git runs then, not for every one-file check).
        self._cwd = self.roots[0]
        self._project_root = project_root
        self._project: Optional[list[str]] = None
        self._work_trees: list[str] = []  # the git work trees of the files named on the command line

    @property
    def checked_roots(self) -> list[str]:
        """The resolved directories named on the command line and those of the files named
        there (`roots` without the working directory, unless it was named)."""
        return self.roots[1:]

    @property
    def index_roots(self) -> list[str]:
        """Where the project index may read: the checked paths, and the git work tree of each
        file named on the command line, so that pre-commit's staged files are judged with the
        same knowledge of their imports as `torchlint check .` from the top."""
        return list(dict.fromkeys(self.checked_roots + self._work_trees))

    @property
    def project(self) -> list[str]:
        if self._project is None:
            root = self._project_root() if callable(self._project_root) else self._project_root
            self._project = [self._cwd, *([os.path.realpath(root)] if root else [])]
        return self._project

    def iter_files(self, paths: list[str]) -> Iterator[tuple[str, Settings]]:
        seen: set[str] = set()
        # A linked file itself is judged by `refusal` below; this catches a linked directory,
        # named or above a named file.
        refused = {raw for raw in paths if os.path.lexists(raw) and (os.path.isdir(raw) or not os.path.islink(raw))
                   and link_outside(raw, lambda: self.project)}
        for raw in paths:
            if raw not in refused:
                is_dir = os.path.isdir(raw)
                self.roots.append(os.path.realpath(raw if is_dir else os.path.dirname(os.path.abspath(raw))))
                tree = None if is_dir else work_tree(self.roots[-1])
                if tree is not None:
                    self._work_trees.append(tree)
        for raw in paths:
            path = spelled(raw)
            if raw in refused:
                self.skipped.append((path, OUTSIDE_LINK))
            elif os.path.isdir(path):
                yield from self._walk(path, seen)
            elif os.path.lexists(path):
                settings = self.resolver.for_file(path)
                if self.force_exclude and settings.is_excluded(path):
                    continue
                key = os.path.abspath(path)
                if key in seen:
                    continue
                seen.add(key)
                why = refusal(key, self.roots)
                if why is not None:
                    self.skipped.append((path, why))
                    continue
                yield path, settings
            else:
                self.missing.append(raw)

    def _walk(self, top: str, seen: set[str]) -> Iterator[tuple[str, Settings]]:
        top_settings = self.resolver.for_directory(top)
        if self.force_exclude and top != "." and top_settings.is_excluded(top):
            return
        visible = _git_visible_files(top) if top_settings.respect_gitignore else None
        ignores = (_gitignore_files(top) if top_settings.respect_gitignore and visible is None else None) \
            or NOTHING_IGNORED
        visible_dirs: Optional[set[str]] = None
        if visible is not None:
            visible_dirs = {os.path.abspath(top)}
            for f in visible:
                parent = os.path.dirname(f)
                while parent not in visible_dirs and len(parent) > 1:
                    visible_dirs.add(parent)
                    parent = os.path.dirname(parent)
        for dirpath, dirnames, filenames in os.walk(top):
            current = spelled(dirpath)
            settings = self.resolver.for_directory(current)
            rel = settings.relative(current)
            kept = []
            ignores.enter(dirpath, os.path.dirname(dirpath) if current != top else None)
            for d in sorted(dirnames):
                if settings.is_excluded_entry(rel, d) or ignores.ignored(dirpath, d, True):
                    continue
                if visible_dirs is not None and os.path.abspath(os.path.join(dirpath, d)) not in visible_dirs:
                    continue
                kept.append(d)
            dirnames[:] = kept
            for name in sorted(filenames):
                if not name.endswith(PYTHON_SUFFIXES):
                    continue
                key = os.path.abspath(os.path.join(dirpath, name))
                if key in seen or settings.is_excluded_entry(rel, name) or ignores.ignored(dirpath, name, False):
                    continue
                if visible is not None and key not in visible:
                    continue
                seen.add(key)
                why = refusal(key, self.roots)
                if why is not None:
                    self.skipped.append((_join(current, name), why))
                    continue
                yield _join(current, name), settings
