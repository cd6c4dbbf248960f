"""Persistent cache: a file whose content, effective settings and torchlint version are
unchanged reuses its findings without being parsed.

One index per cache directory and torchlint version (`<cache-dir>/<version>/index.json`),
mapping each file (by its path relative to the directory holding the cache directory: the
project, for the default cache, so a moved checkout still hits, and never the working
directory, so runs started anywhere share the entries) to its content hash, the key of the settings it was linted with, and its findings. A warm run
reads one file and stats each source file: when size, mtime, ctime and inode all match the
index, the recorded hash is trusted; otherwise the file is hashed and compared. Files
modified within the last seconds before the index was written are always re-hashed (git's
"racy clean" rule), so an edit that keeps size and mtime is never missed.

The cache is data, never code, and never trusted blindly: a cache directory that git
tracks (a pull request could commit one that hides findings) or that a config file places
outside the project is refused with a warning; the index is read only if it is a regular
file of bounded size, and every entry is type-checked, a bad one dropped and rewritten.
Writes are atomic (temp file + os.replace) and never follow a symlink, neither at the index
nor at any directory from the cache root down: concurrent runs may drop each other's new
entries, never corrupt the index. Each entry carries a keyed MAC (torchlint.integrity) under a
key the checked tree cannot read, so a cache shipped without git (an unpacked sdist) cannot
hide findings: a forged entry fails the check and is re-linted and rewritten."""

from __future__ import annotations

import json
import os
import sys
import time

from torchlint import __version__, integrity
from torchlint.diagnostics import Finding
from torchlint.git_index import maybe_tracked
from torchlint.hashing import EXISTS, EXISTS_UNREAD, MISSING, blake2b, compare_digest, content_hash
from torchlint.records import Fix, RecordError
from torchlint.safe_io import RefusedFile, is_within, read_regular_file, replace_atomically

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, IO, Iterator, Optional

CACHE_DIR_NAME = ".torchlint_cache"
_FORMAT = 10  # 10: deps include the package markers that named the module; 9: BLAKE2b hashes and MACs; 8: entries list the files they depend on; 7: notebook findings keep their fixes (cell rows); 6: entries carry a MAC; 5: findings carry `help`
_RACY_SECONDS = 2.0
MAX_INDEX_BYTES = 256 * 1024 * 1024
_MAX_TEXT = 20_000  # characters in one cached string
_MAX_DEPTH = 8  # nesting of a cached JSON value (fix edits, probe values)
_MAX_ITEMS = 10_000  # findings per file, items per container
_STAT_FIELDS = ("size", "mtime", "ctime", "ino")


def settings_key(codes: frozenset[str], options: tuple, index_roots: tuple[str, ...] = ()) -> str:
    """Everything besides the file's bytes that its findings depend on: the rules, their
    options, and where the project index may look for the modules it imports."""
    blob = repr((sorted(codes), options, index_roots, sys.version_info[:2], _FORMAT))
    return blake2b(blob.encode(), digest_size=16).hexdigest()


def refusal(cache_dir: str, project_root: str, from_config: bool) -> Optional[str]:
    """Why a cache directory must not be used, or None. Called once per run."""
    resolved = os.path.realpath(cache_dir)
    root = os.path.realpath(project_root)
    if from_config and not is_within(resolved, [root]):
        return (f"cache-dir {cache_dir} lies outside the project ({project_root}); caching is off. "
                f"Use a directory inside the project, or pass --cache-dir on the command line")
    if os.path.isdir(cache_dir) and maybe_tracked(resolved):
        from torchlint.git import run_git  # git only when a cache exists and its index may list it

        proc = run_git(resolved, "ls-files", "-z", "--", ".")
        if proc is not None and proc.returncode == 0 and proc.stdout.strip(b"\0"):
            return (f"{cache_dir} is tracked by git; a committed cache could hide findings, so it is "
                    f"not used. Remove it from the repository (`git rm -r --cached {cache_dir}`)")
    return None


class Cache:
    def __init__(self, root: str, project_root: Optional[str] = None, read: bool = True) -> None:
        self.root = root
        self.project_root = os.path.realpath(project_root or os.getcwd())
        # What entry names are relative to: the same however the run was started.
        self.base = os.path.dirname(os.path.realpath(root))
        self.index_path = os.path.join(root, __version__, "index.json")
        self.read = read  # False: write fresh results, serve none (--verify re-lints every file)
        self._entries: Optional[dict[str, Any]] = None
        # Entries stored in this run, as their JSON in an unnamed temporary file: name ->
        # (offset, length). A cold run's memory stays flat in the number of files (in memory,
        # the JSON alone was a kilobyte a file, a dict several).
        self._packed: dict[str, tuple[int, int]] = {}
        self._spool: Optional[IO[bytes]] = None
        self._dirty = False
        self._key: Optional[bytes] = None
        self._key_loaded = False
        self._dep_hashes: dict[str, Optional[str]] = {}  # per run: a dependency's current hash

    @property
    def key(self) -> Optional[bytes]:
        """The MAC key; None: no cache can be trusted, so none is read or written."""
        if not self._key_loaded:
            self._key_loaded = True
            self._key = integrity.load_key([self.project_root, self.root])
        return self._key

    @property
    def entries(self) -> dict[str, Any]:
        if self._entries is None:
            self._entries = self._load() if self.read else {}
        return self._entries

    def entry(self, name: str) -> Optional[dict[str, Any]]:
        """The entry for `name` (a path key), stored in this run or loaded, or None."""
        packed = self._packed.get(name)
        return json.loads(self._unspool(packed)) if packed is not None else self.entries.get(name)

    def _unspool(self, packed: tuple[int, int]) -> bytes:
        assert self._spool is not None
        self._spool.seek(packed[0])
        return self._spool.read(packed[1])

    def _load(self) -> dict[str, Any]:
        key = self.key
        if key is None or cache_subdir(self.root, __version__) is None:
            return {}
        try:
            data = json.loads(read_regular_file(self.index_path, MAX_INDEX_BYTES, follow_symlinks=False))
        except (OSError, ValueError, RefusedFile, RecursionError, MemoryError):
            return {}  # missing, truncated, special or foreign: start afresh
        if type(data) is not dict or data.get("format") != _FORMAT or data.get("version") != __version__ \
                or type(data.get("files")) is not dict:
            return {}
        files = data["files"]
        valid = {name: entry for name, entry in files.items()
                 if _valid_entry(entry) and compare_digest(entry_mac(key, name, entry), entry["mac"])}
        if len(valid) != len(files):
            self._dirty = True  # rewrite without the bad entries
        return valid

    def roots_key(self, roots: tuple[str, ...]) -> tuple[str, ...]:
        """The index roots as the settings key holds them: relative, like entries' names,
        so a moved checkout still hits."""
        return tuple(self._path_key(r) for r in roots)

    def _path_key(self, path: str) -> str:
        absolute = os.path.abspath(path)
        if is_within(absolute, [self.base]):
            return os.path.relpath(absolute, self.base).replace(os.sep, "/")
        return absolute

    def lookup(self, path: str, settings: str, display: str, stat: os.stat_result,
               max_bytes: int) -> tuple[Optional[tuple[list[Finding], Optional[Finding], dict[str, Optional[str]]]],
                                        Optional[bytes], Optional[str]]:
        """(cached result or None, the file's bytes if they had to be read, their hash).
        A result stands only while every file it depends on (the modules the project index
        read for it, and those it looked for and did not find) is as it was.
        Raises RefusedFile/OSError when the file cannot be read; the caller reports it."""
        entry = self.entry(self._path_key(path))
        if entry is None or entry["settings"] != settings:
            return None, None, None
        data = digest = None
        if entry["mtime"] is None or stat_record(stat) != tuple(entry[k] for k in _STAT_FIELDS):
            data = read_regular_file(path, max_bytes)
            digest = content_hash(data)
            if digest != entry["hash"]:
                return None, data, digest
        deps = {self._dep_path(name): recorded for name, recorded in entry["deps"].items()}
        if not all(self._dep_unchanged(dep, recorded, max_bytes) for dep, recorded in deps.items()):
            return None, data, digest or entry["hash"]
        findings = [Finding.from_cache(display, f) for f in entry["findings"]]
        parse_error = Finding.from_cache(display, entry["parse_error"]) if entry["parse_error"] else None
        return (findings, parse_error, deps), data, digest or entry["hash"]  # the hash of the bytes now there

    def _dep_path(self, name: str) -> str:
        return name if os.path.isabs(name) else os.path.join(self.base, name)

    def _dep_unchanged(self, dep: str, recorded: Optional[str], max_bytes: int) -> bool:
        """A package marker by existence (nothing read: it may lie above the roots), else by hash."""
        if recorded == EXISTS or recorded == MISSING:
            return os.path.isfile(dep) == (recorded == EXISTS)
        if recorded == EXISTS_UNREAD:
            return os.path.isfile(dep) and self._current_hash(dep, max_bytes) is None
        return self._current_hash(dep, max_bytes) == recorded

    def _current_hash(self, path: str, max_bytes: int) -> Optional[str]:
        """A dependency's content hash now (None: absent, not a regular file, unreadable),
        trusting its own entry's hash when its stat matches, as for any file."""
        if path in self._dep_hashes:
            return self._dep_hashes[path]
        found: Optional[str] = None
        try:
            st = os.stat(path)
            entry = self.entry(self._path_key(path))
            if entry is not None and entry["mtime"] is not None \
                    and stat_record(st) == tuple(entry[k] for k in _STAT_FIELDS):
                found = entry["hash"]
            else:
                found = content_hash(read_regular_file(path, max_bytes))
        except (OSError, RefusedFile):
            found = None
        self._dep_hashes[path] = found
        return found

    def store(self, path: str, settings: str, digest: str, stat: Optional[tuple[int, int, int, int]],
              findings: list[Finding], parse_error: Optional[Finding],
              deps: Optional[dict[str, Optional[str]]] = None) -> None:
        key = self.key
        if key is None:
            return
        # `stat` is the file's `stat_record`, taken before it was read (four ints, not a stat_result).
        racy = stat is None or time.time() - stat[1] / 1e9 < _RACY_SECONDS
        size, mtime, ctime, ino = stat if stat is not None else (None,) * 4
        name = self._path_key(path)
        entry: dict[str, Any] = {
            "settings": settings, "hash": digest, "size": size, "mtime": None if racy else mtime,
            "ctime": ctime, "ino": ino,
            "findings": [f.to_cache() for f in findings],
            "parse_error": parse_error.to_cache() if parse_error else None,
            "deps": {self._path_key(dep): recorded for dep, recorded in sorted((deps or {}).items())},
        }
        entry["mac"] = entry_mac(key, name, entry)
        self.entries.pop(name, None)
        data = json.dumps(entry, separators=(",", ":")).encode("utf-8")
        try:
            if self._spool is None:
                import tempfile  # only once a file is linted afresh: warm runs never need it

                self._spool = tempfile.TemporaryFile(prefix="torchlint-cache-")
            offset = self._spool.seek(0, os.SEEK_END)
            self._spool.write(data)
        except OSError:
            return  # no room for a temporary file: this run caches what it already stored
        self._packed[name] = (offset, len(data))
        self._dirty = True

    def save(self) -> None:
        if not self._dirty:
            return
        self._dirty = False
        try:
            # A symlinked component (committed, or planted) must not move our writes elsewhere.
            if self.key is None or cache_subdir(self.root, __version__, create=True) is None:
                return
            _create_exclusive(os.path.join(self.root, ".gitignore"), "# Automatically created by torchlint.\n*\n")
            replace_atomically(self.index_path, self._index_chunks())
        except OSError:
            pass  # a read-only checkout still lints; it just does not cache

    def _index_chunks(self) -> Iterator[bytes]:
        """The index file's JSON, piece by piece: written without ever holding all of it."""
        yield json.dumps({"format": _FORMAT, "version": __version__})[:-1].encode("utf-8") + b', "files": {'
        first = True
        for name, entry in self.entries.items():
            if name not in self._packed:
                yield (b"" if first else b",") + json.dumps({name: entry})[1:-1].encode("utf-8")
                first = False
        for name, packed in self._packed.items():
            yield (b"" if first else b",") + json.dumps(name).encode("utf-8") + b":" + self._unspool(packed)
            first = False
        yield b"}}"


def cache_subdir(root: str | os.PathLike[str], *parts: str, create: bool = False) -> Optional[str]:
    """`root/part/...`, or None when the root or a directory below it is a symlink or not a
    directory (a committed `.torchlint_cache/verify -> ../../x` must not move reads or writes
    out of the checkout). `create` makes the missing directories, one level at a time, each
    checked before anything is created inside it."""
    path = top = os.fspath(root)
    for part in ("", *parts):
        path = os.path.join(path, part) if part else path
        if os.path.islink(path):
            return None
        if not os.path.isdir(path):
            if not create or os.path.lexists(path):
                return None
            try:
                if path == top:
                    os.makedirs(path)  # the root's parents are the user's, or the project's
                else:
                    os.mkdir(path)
            except FileExistsError:
                pass
            if os.path.islink(path) or not os.path.isdir(path):
                return None
    return path


def entry_mac(key: bytes, name: str, entry: dict[str, Any]) -> str:
    """An entry's MAC: over the file it is for and everything it says but the MAC."""
    return integrity.tag(key, [_FORMAT, __version__, name, {k: v for k, v in entry.items() if k != "mac"}])


def stat_record(stat: os.stat_result) -> tuple[int, int, int, int]:
    """What an entry keeps of a file's stat (size, mtime, ctime, inode)."""
    return stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino


def _create_exclusive(path: str, text: str) -> None:
    """Create `path` unless something (a file, a dangling symlink) is already there."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    except FileExistsError:
        return
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)


# -- validation of what the index holds ----------------------------------------------

def _is_int(value: Any) -> bool:
    return type(value) is int and -(2**63) <= value < 2**64


def _valid_entry(entry: Any) -> bool:
    if type(entry) is not dict or set(entry) != {"settings", "hash", *_STAT_FIELDS, "findings", "parse_error", "deps",
                                                  "mac"}:
        return False
    deps = entry["deps"]
    if type(deps) is not dict or len(deps) > _MAX_ITEMS or not all(
            _short_str(k, 4096) and (v is None or _short_str(v, 64)) for k, v in deps.items()):
        return False
    if not (_short_str(entry["settings"], 64) and _short_str(entry["hash"], 64) and _short_str(entry["mac"], 64)):
        return False
    if not all(entry[k] is None or _is_int(entry[k]) for k in _STAT_FIELDS):
        return False
    findings = entry["findings"]
    if type(findings) is not list or len(findings) > _MAX_ITEMS or not all(map(_valid_finding, findings)):
        return False
    return entry["parse_error"] is None or _valid_finding(entry["parse_error"])


def _short_str(value: Any, limit: int = _MAX_TEXT) -> bool:
    return type(value) is str and len(value) <= limit



_INT_FIELDS = frozenset({"row", "col", "end_row", "end_col"})
_STR_FIELDS = frozenset({"code", "message", "severity", "name"})
_CACHED_FIELDS = frozenset(Finding(code="", message="", path="", row=1, col=1, end_row=1, end_col=1).to_cache())


def _valid_finding(data: Any) -> bool:
    if type(data) is not dict or set(data) != _CACHED_FIELDS:
        return False
    for key, value in data.items():
        if key in _INT_FIELDS:
            if not (_is_int(value) and 0 < value < 10**9):
                return False
        elif key in _STR_FIELDS:
            if not _short_str(value):
                return False
        elif not _bounded_json(value, 0):
            return False
    return data["fix"] is None or _has_shape(Fix, data["fix"])


def _has_shape(record: Any, value: Any) -> bool:
    try:
        record.from_json(value)
    except RecordError:
        return False
    return True


def _bounded_json(value: Any, depth: int) -> bool:
    """A JSON value of bounded depth, length and string size (fix edits, probe values)."""
    kind = type(value)
    if value is None or kind in (bool, float) or (kind is int and _is_int(value)):
        return True
    if kind is str:
        return len(value) <= _MAX_TEXT
    if depth >= _MAX_DEPTH:
        return False
    if kind is list:
        return len(value) <= _MAX_ITEMS and all(_bounded_json(v, depth + 1) for v in value)
    if kind is dict:
        return len(value) <= _MAX_ITEMS and all(
            type(k) is str and len(k) <= 200 and _bounded_json(v, depth + 1) for k, v in value.items())
    return False
