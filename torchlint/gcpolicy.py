"""When the cyclic garbage collector runs during a batch lint.

A lint keeps long-lived objects (results, cache records, the project index's parsed
modules) and makes short-lived ones per file, a few of them in cycles (scopes point at their
parents). Left to its thresholds, the collector walks the long-lived ones again in every full
collection: about 3 of 16 CPU-s over transformers' `models/`. In a batch it is switched off
and `settle` runs after each file instead: one young-generation collection frees that file's
cycles, and what survives it is frozen, so no later collection walks it again."""

from __future__ import annotations

import gc
from contextlib import contextmanager

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable, Iterator, TypeVar
    T = TypeVar("T")
    R = TypeVar("R")


_one_shot = False


def one_shot() -> None:
    """This process ends with its command (the console script's `check` that does not
    --watch): what is alive now (the imports) and what survives a batch lives until the exit,
    so no collection walks it again (in a one-file check, the two collections that walked them
    took ~2.4 ms). Never in a process that goes on: frozen garbage is never freed."""
    global _one_shot
    _one_shot = True
    gc.freeze()


@contextmanager
def batch() -> Iterator[None]:
    """The automatic collector off for the block (forked workers inherit it), then as it was."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if _one_shot:
            gc.freeze()
        if was_enabled:
            gc.enable()


def settle() -> None:
    """Free the cycles made since the last call and keep the survivors out of later walks.
    Only the young generations are walked: everything older is already frozen."""
    gc.collect(1)
    gc.freeze()


def settled(work: Callable[[T], R], item: T) -> R:
    """`work(item)`, then `settle()` (a module-level function, so worker processes can run
    `functools.partial(settled, work)`)."""
    result = work(item)
    settle()
    return result
