"""The hashes on the start-up path: BLAKE2b from CPython's built-in `_blake2`, not `hashlib`,
whose import loads OpenSSL (about 4 ms of a 40 ms one-file check, and `hmac` needs it too).
Keyed BLAKE2b is a MAC by design (RFC 7693), so the cache's MAC needs no HMAC construction.
`hashlib.blake2b` is this same function: other Pythons fall back to it."""

from __future__ import annotations

try:
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - not CPython
    from hashlib import blake2b
try:
    from _operator import _compare_digest as compare_digest
except ImportError:  # pragma: no cover - not CPython
    from hmac import compare_digest  # type: ignore[no-redef]

__all__ = ["EXISTS", "EXISTS_UNREAD", "MISSING", "compare_digest", "content_hash", "keyed_hash"]

# Dependencies recorded by existence, not by their bytes: a package marker (`__init__.py`)
# names a package by being a file, whatever it holds (torchlint.analysis.project_index).
EXISTS = "exists"  # a file
MISSING = "missing"  # no file
EXISTS_UNREAD = "exists-unread"  # a file, and as a module of the project unreadable (too big, linked out)


def content_hash(data: bytes) -> str:
    """What the lint cache, the project index and the replay records compare file bytes by."""
    return blake2b(data, digest_size=32).hexdigest()


def keyed_hash(key: bytes, data: bytes) -> str:
    """A MAC of `data` under `key` (at most 64 bytes)."""
    return blake2b(data, digest_size=32, key=key).hexdigest()
