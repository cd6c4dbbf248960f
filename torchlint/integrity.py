"""Cache entries the checked tree cannot forge: a keyed BLAKE2b MAC whose key lives in the user's
cache directory (`$XDG_CACHE_HOME/torchlint/key`, else `~/.cache/torchlint/key`), never in
the project.

A tree without git (an unpacked sdist, a tarball) can ship a `.torchlint_cache` whose
entries say `findings: []`; without a key it does not know, it cannot make them pass. The
key is 32 random bytes, created once with mode 0600 and published atomically (written to a
temporary file, then hard-linked into place, so a concurrent run reads the whole key or
creates none). When no key can be read or created (a read-only home, a key that is not a
private regular file of ours, a key directory inside the checked tree) every cache is
distrusted: `load_key` returns None and the callers neither read nor write entries."""

from __future__ import annotations

import os
import stat

from torchlint.hashing import compare_digest, keyed_hash
from torchlint.safe_io import is_within

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Iterable, Optional

KEY_BYTES = 32
_loaded: dict[str, Optional[bytes]] = {}


def key_path() -> Optional[str]:
    """Where the key lives; None when there is no home to put it in."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if xdg and os.path.isabs(xdg):  # the XDG spec: a relative value is ignored
        base = xdg
    else:
        home = os.path.expanduser("~")
        if not home or home == "~" or not os.path.isabs(home):
            return None
        base = os.path.join(home, ".cache")
    return os.path.join(base, "torchlint", "key")


def load_key(untrusted: Iterable[str | os.PathLike[str]] = ()) -> Optional[bytes]:
    """The key, created on first use; None when it cannot be had safely. `untrusted`:
    directories (the checked project, the cache directory) the key must not lie in."""
    path = key_path()
    if path is None:
        return None
    real = os.path.realpath(path)
    if is_within(real, [os.path.realpath(d) for d in untrusted]):
        return None  # a key the checked tree can read or replace protects nothing
    if real not in _loaded:
        _loaded[real] = _read_key(path) or _create_key(path)
    return _loaded[real]


def _read_key(path: str) -> Optional[bytes]:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        private = stat.S_ISREG(st.st_mode) and not st.st_mode & 0o077 and (
            not hasattr(os, "geteuid") or st.st_uid == os.geteuid())
        data = os.read(fd, KEY_BYTES + 1) if private else b""
    finally:
        os.close(fd)
    return data if len(data) == KEY_BYTES else None


def _create_key(path: str) -> Optional[bytes]:
    tmp = os.path.join(os.path.dirname(path), f".key-{os.urandom(8).hex()}.tmp")
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        key = os.urandom(KEY_BYTES)  # what secrets.token_bytes returns, without its imports
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            os.write(fd, key)
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)  # fails if another run published its key first: use that one
        except FileExistsError:
            return _read_key(path)
        return key
    except OSError:
        return None
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def tag(key: bytes, value: Any) -> str:
    """The MAC of a JSON value (canonical form: sorted keys, no spaces)."""
    import json  # the verdict cache's: a lint run's cache hit imports no json

    blob = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return keyed_hash(key, blob.encode("utf-8", "surrogatepass"))


def check(key: bytes, value: Any, mac: Any) -> bool:
    return type(mac) is str and compare_digest(tag(key, value), mac)


def seal(entry: dict[str, Any], untrusted: Iterable[str | os.PathLike[str]]) -> Optional[dict[str, Any]]:
    """`entry` with its MAC added (`"mac"`), or None when there is no key to sign with."""
    key = load_key(untrusted)
    return None if key is None else {**entry, "mac": tag(key, entry)}


def unseal(data: dict[str, Any], untrusted: Iterable[str | os.PathLike[str]]) -> bool:
    """Whether `data` (an entry with its `"mac"`) was sealed under our key."""
    key = load_key(untrusted)
    return key is not None and check(key, {k: v for k, v in data.items() if k != "mac"}, data.get("mac"))
