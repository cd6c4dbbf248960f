"""The repository root that code-scanning paths are relative to.

GitHub maps SARIF URIs and workflow-command `file=` paths against the checkout root, not
the directory torchlint ran in, so reports name files relative to the git work-tree root
(`--project-root` overrides it; outside a repository the working directory is used)."""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Optional, Union

    PathLike = Union[str, os.PathLike[str]]


def git_toplevel(directory: PathLike) -> Optional[Path]:
    """The work-tree root containing `directory`, or None (no git, not a repository).
    Runs git with the same safe settings as discovery (no fsmonitor, no hooks)."""
    from torchlint.git import run_git  # subprocess, only when a root is asked for

    proc = run_git(directory, "rev-parse", "--show-toplevel")
    if proc is None or proc.returncode != 0:
        return None
    top = proc.stdout.decode("utf-8", "surrogateescape").strip()
    from pathlib import Path  # only where a root is asked for: a one-file text report needs none

    return Path(top).resolve() if top else None


def project_root(cwd: PathLike, override: Optional[PathLike] = None) -> Path:
    from pathlib import Path

    if override is not None:
        return Path(override).resolve()
    return git_toplevel(cwd) or Path(cwd).resolve()


def relative_to_root(path: str, root: Path, cwd: Path) -> Optional[str]:
    """`path` (as displayed, relative to `cwd` or absolute) as a POSIX path relative to
    `root`, or None when the file lies outside it."""
    from pathlib import Path

    absolute = Path(path) if os.path.isabs(path) else cwd / path
    try:
        return Path(os.path.realpath(absolute)).relative_to(root).as_posix()
    except ValueError:
        pass
    try:  # a symlinked checkout: compare unresolved spellings too
        return Path(os.path.abspath(absolute)).relative_to(root).as_posix()
    except ValueError:
        return None
