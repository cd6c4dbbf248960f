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


@contextmanager
def batch() -> Iterator[None]:
    """The automatic collector off for the block (forked workers inherit it), then as it was."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
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
