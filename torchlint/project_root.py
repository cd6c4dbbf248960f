"""The repository root that code-scanning paths are relative to.

GitHub maps SARIF URIs and workflow-command `file=` paths against the checkout root, not
the directory torchlint ran in, so reports name files relative to the git work-tree root
(`--project-root` overrides it; outside a repository the working directory is used)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Optional

# Read-only git: never start an fsmonitor daemon (a repository's config could name any
# program as its fsmonitor hook) and never take the index lock.
_SAFE_GIT = ["git", "-c", "core.fsmonitor=false"]


def git_toplevel(directory: Path) -> Optional[Path]:
    """The work-tree root containing `directory`, or None (no git, not a repository)."""
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}
    try:
        proc = subprocess.run([*_SAFE_GIT, "-C", str(directory), "rev-parse", "--show-toplevel"],
                              capture_output=True, timeout=30, check=False, env=env)
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    top = proc.stdout.decode("utf-8", "surrogateescape").strip()
    return Path(top).resolve() if top else None


def project_root(cwd: Path, override: Optional[Path] = None) -> Path:
    if override is not None:
        return override.resolve()
    return git_toplevel(cwd) or cwd.resolve()


def relative_to_root(path: str, root: Path, cwd: Path) -> Optional[str]:
    """`path` (as displayed, relative to `cwd` or absolute) as a POSIX path relative to
    `root`, or None when the file lies outside it."""
    absolute = Path(path) if os.path.isabs(path) else cwd / path
    try:
        return Path(os.path.realpath(absolute)).relative_to(root).as_posix()
    except ValueError:
        pass
    try:  # a symlinked checkout: compare unresolved spellings too
        return Path(os.path.abspath(absolute)).relative_to(root).as_posix()
    except ValueError:
        return None
