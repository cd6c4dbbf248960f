"""What the settings read during one run (config files, requirements files and listings), for
torchlint.replay: an answer is recorded only while those files still hold what was read, so
an edit made while the run went on is never replayed. Collected only while `watching` (set by
the replay for a command line whose answer it may record); nothing otherwise."""

from __future__ import annotations

import os

watching = False
read: dict[str, str] = {}  # path -> content hash of the bytes read
listed: dict[str, tuple[str, ...]] = {}  # settings root -> the requirements*.txt names listed there


def requirements_names(root: str) -> list[str]:
    """The `requirements*.txt` names in `root`, sorted, as torchlint.project_torch reads them
    and torchlint.replay compares them (`Path.glob` would compile its pattern every run)."""
    return sorted(n for n in os.listdir(root) if n.startswith("requirements") and n.endswith(".txt"))


def watch(on: bool) -> None:
    """Start (or stop) collecting, from nothing."""
    global watching
    watching = on
    read.clear()
    listed.clear()


def note_read(path: str, data: bytes) -> None:
    if watching:
        from torchlint.hashing import content_hash

        read[os.path.abspath(path)] = content_hash(data)


def note_listing(root: str, names: list[str]) -> None:
    if watching:
        listed[os.path.abspath(root)] = tuple(names)
