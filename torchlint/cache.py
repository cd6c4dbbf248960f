"""Persistent cache: a file whose content, effective settings and torchlint version are
unchanged reuses its findings without being parsed.

One entry file per checked file and torchlint version
(`<cache-dir>/<version>/entries/<2 hex>/<30 hex>`, a hash of the file's name: its path
relative to the directory holding the cache directory, the project for the default cache, so
a moved checkout still hits, and never the working directory, so runs started anywhere share
the entries), holding its content hash, the key of the settings it was linted with, and its
findings. A run reads the entries of the files it checks and no other: a one-file run costs
the same in a project of 10 files or 50,000. A warm file is stat'ed: when size, mtime, ctime
and inode all match its entry, the recorded hash is trusted; otherwise the file is hashed and
compared. Files modified within the last seconds before the entry was written are always
re-hashed (git's "racy clean" rule), so an edit that keeps size and mtime is never missed.

The cache is data, never code, and never trusted blindly: a cache directory that git
tracks (a pull request could commit one that hides findings) or that a config file places
outside the project is refused with a warning; an entry is read only if it is a regular file
of bounded size reached without symlinks, and only when its keyed MAC (torchlint.integrity's
key, which the checked tree cannot read) is ours, so a cache shipped without git (an unpacked
sdist) cannot hide findings: a forged entry fails the check and is re-linted and rewritten.
Only then is its payload decoded (marshal: bytes we wrote) and type-checked. Writes are
atomic (temp file + os.replace) and never follow a symlink, neither at the entry nor at any
directory from the cache root down: concurrent runs may overwrite each other's entries,
never tear one."""

from __future__ import annotations

import marshal
import os
import sys
import time

from torchlint import __version__, integrity
from torchlint.diagnostics import Finding
from torchlint.git_index import maybe_tracked
from torchlint.hashing import EXISTS, EXISTS_UNREAD, MISSING, blake2b, compare_digest, content_hash, keyed_hash
from torchlint.records import Fix, RecordError
from torchlint.safe_io import RefusedFile, is_within, read_regular_file, replace_exclusively

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional

CACHE_DIR_NAME = ".torchlint_cache"
_FORMAT = 11  # 11: one file an entry, marshal under the MAC; 10: deps include the package markers that named the module; 9: BLAKE2b hashes and MACs; 8: entries list the files they depend on; 7: notebook findings keep their fixes (cell rows); 6: entries carry a MAC; 5: findings carry `help`
_RACY_SECONDS = 2.0
MAX_ENTRY_BYTES = 64 * 1024 * 1024
ENTRIES = "entries"  # <cache-dir>/<version>/entries/<2 hex>/<30 hex>: one file per checked file
_SEAL = f"torchlint lint cache {_FORMAT} {__version__}\n".encode("ascii")
_MAC_LENGTH = 64  # hex of a 32-byte keyed BLAKE2b
_MAX_KEYS = 4096  # entry names a run remembers (the package markers many files depend on)
_MAX_TEXT = 20_000  # characters in one cached string
_MAX_DEPTH = 8  # nesting of a cached value (fix edits, probe values)
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
        self.read = read  # False: write fresh results, serve none (--verify re-lints every file)
        self._written: set[str] = set()  # names stored in this run when not `read` (served anyway)
        self._fans: dict[str, str] = {}  # fan-out directories checked free of symlinks in this run
        self._missing: set[str] = set()  # fan-out directories found absent in this run
        self._keys: dict[str, str] = {}  # path -> entry name, for this run (the cwd is fixed)
        self._prepared: Optional[bool] = None  # the version directory made and checked, once a run
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

    def entry(self, name: str) -> Optional[dict[str, Any]]:
        """The entry for `name` (a path key), read from its file and checked, or None."""
        if not self.read and name not in self._written:
            return None
        key = self.key
        if key is None:
            return None
        fan, rest = _slot(name)
        directory = self._fan_dir(fan)
        if directory is None:
            return None
        try:
            data = read_regular_file(os.path.join(directory, rest), MAX_ENTRY_BYTES, follow_symlinks=False)
        except (OSError, RefusedFile):
            return None
        return unseal_entry(key, name, data)

    def _fan_dir(self, fan: str, create: bool = False) -> Optional[str]:
        """An entries directory, checked once a run (cache_subdir: no symlink from the root
        down); one found missing is looked for again only to create it (a cold run's misses)."""
        directory = self._fans.get(fan)
        if directory is None and (create or fan not in self._missing):
            directory = cache_subdir(self.root, __version__, ENTRIES, fan, create=create)
            if directory is None:
                self._missing.add(fan)
            else:
                self._fans[fan] = directory
        return directory

    def roots_key(self, roots: tuple[str, ...]) -> tuple[str, ...]:
        """The index roots as the settings key holds them: relative, like entries' names,
        so a moved checkout still hits."""
        return tuple(self._path_key(r) for r in roots)

    def _path_key(self, path: str) -> str:
        """The name of a file's entry; memoized for the run (the same package markers and
        modules are dependencies of many files, and relpath is ~15 us)."""
        key = self._keys.get(path)
        if key is None:
            key = _entry_name(self.base, path)
            if len(self._keys) >= _MAX_KEYS:
                self._keys.clear()  # memory stays flat in the number of files
            self._keys[path] = key
        return key

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
        """Write the file's entry now, atomically: memory stays flat in the number of files,
        and concurrent runs may overwrite each other's entries, never tear one."""
        key = self.key
        if key is None or not self._prepare():
            return
        # `stat` is the file's `stat_record`, taken before it was read (four ints, not a
        # stat_result), None where that was racy already (linter.lint_task_hashed).
        recent = stat is None or racy(stat)
        size, mtime, ctime, ino = stat if stat is not None else (None,) * 4
        name = self._path_key(path)
        entry: dict[str, Any] = {
            "settings": settings, "hash": digest, "size": size, "mtime": None if recent else mtime,
            "ctime": ctime, "ino": ino,
            "findings": [f.to_cache() for f in findings],
            "parse_error": parse_error.to_cache() if parse_error else None,
            "deps": {self._path_key(dep): recorded for dep, recorded in sorted((deps or {}).items())},
        }
        fan, rest = _slot(name)
        try:
            # A symlinked component (committed, or planted) must not move our writes elsewhere.
            directory = self._fan_dir(fan, create=True)
            if directory is not None:
                replace_exclusively(os.path.join(directory, rest), seal_entry(key, name, entry), 0o600)
                if not self.read:
                    self._written.add(name)
        except OSError:
            pass  # a full disk or a read-only checkout still lints; it just does not cache

    def _prepare(self) -> bool:
        """The version directory, made once a run, with the cache's .gitignore, and without
        the single index file of format 10 and before (one file for every entry, which a
        one-file run had to read whole: 140 ms where 1,500 files were cached)."""
        if self._prepared is None:
            self._prepared = False
            try:
                version = cache_subdir(self.root, __version__, create=True)
                if version is not None:
                    _create_exclusive(os.path.join(self.root, ".gitignore"),
                                      "# Automatically created by torchlint.\n*\n")
                    old = os.path.join(version, "index.json")
                    if os.path.isfile(old) and not os.path.islink(old):
                        os.unlink(old)
                    self._prepared = True
            except OSError:
                pass
        return self._prepared


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


def seal_entry(key: bytes, name: str, entry: dict[str, Any]) -> bytes:
    """An entry file's bytes: the MAC (hex) over the format, the version and the payload, then
    the payload, `marshal` of (name, entry). The name inside keeps an entry copied to another
    file's slot from being served for it."""
    payload = marshal.dumps((name, entry))
    return keyed_hash(key, _SEAL + payload).encode("ascii") + payload


def unseal_entry(key: bytes, name: str, data: bytes) -> Optional[dict[str, Any]]:
    """The entry `data` holds for `name`, or None when its MAC is not ours (forged, damaged,
    another format) or it is for another file. Only bytes under our MAC reach marshal: they
    are what `seal_entry` wrote, never a crafted stream."""
    mac, payload = data[:_MAC_LENGTH], data[_MAC_LENGTH:]
    if not compare_digest(keyed_hash(key, _SEAL + payload).encode("ascii"), mac):
        return None
    try:
        value = marshal.loads(payload)
    except (ValueError, EOFError, TypeError):
        return None
    if type(value) is not tuple or len(value) != 2 or value[0] != name or not _valid_entry(value[1]):
        return None
    return value[1]


def entry_file(root: str, path: str) -> str:
    """Where the entry of the file at `path` lives in the cache at `root` (present or not)."""
    return os.path.join(root, __version__, ENTRIES, *_slot(_entry_name(os.path.dirname(os.path.realpath(root)), path)))


def _entry_name(base: str, path: str) -> str:
    """A file's entry name: its path relative to `base` (the directory holding the cache), so
    a moved checkout still hits, or absolute when it lies outside."""
    absolute = os.path.abspath(path)
    return os.path.relpath(absolute, base).replace(os.sep, "/") if is_within(absolute, [base]) else absolute


def _slot(name: str) -> tuple[str, str]:
    """(fan-out directory, file name) of an entry: a hash of its name, 256 directories."""
    digest = blake2b(name.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
    return digest[:2], digest[2:]


def racy(stat: tuple[int, int, int, int]) -> bool:
    """A file modified within the last seconds (git's "racy clean"): an edit in the same
    timestamp tick would keep its mtime, so its entry must not vouch for its bytes by stat.
    Judged when the file is stat'ed before its read, and again when the entry is stored."""
    return time.time() - stat[1] / 1e9 < _RACY_SECONDS


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


# -- validation of what an entry holds ------------------------------------------------

def _is_int(value: Any) -> bool:
    return type(value) is int and -(2**63) <= value < 2**64


def _valid_entry(entry: Any) -> bool:
    if type(entry) is not dict or set(entry) != {"settings", "hash", *_STAT_FIELDS, "findings", "parse_error", "deps"}:
        return False
    deps = entry["deps"]
    if type(deps) is not dict or len(deps) > _MAX_ITEMS or not all(
            _short_str(k, 4096) and (v is None or _short_str(v, 64)) for k, v in deps.items()):
        return False
    if not (_short_str(entry["settings"], 64) and _short_str(entry["hash"], 64)):
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
