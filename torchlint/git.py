"""Running git on a checkout that may be untrusted: file discovery (.gitignore), the
project root, and the cache's "is it tracked?" check all go through `run_git`."""

from __future__ import annotations

import os
import subprocess

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional

# git reads the checkout's own .git/config, which an untrusted tree (an unpacked sdist,
# a tarball with its .git) controls: core.fsmonitor there names a program that
# `git ls-files` would run. Turn it off, and ignore the system config.
GIT_SAFE_ARGS = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null")


def git_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0")
    return env


def run_git(directory: str | os.PathLike[str], *args: str) -> Optional[subprocess.CompletedProcess]:
    """`git -C directory args...` with the safe settings; None when git cannot run."""
    try:
        return subprocess.run(["git", *GIT_SAFE_ARGS, "-C", str(directory), *args], capture_output=True,
                              timeout=60, check=False, env=git_env(), stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
