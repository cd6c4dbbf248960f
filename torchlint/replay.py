"""A warm repeat of `torchlint check FILE...`, answered before anything heavy is imported.

The run people repeat most (pre-commit, an editor's save hook, the same files again) asks
the same question of the same inputs. When such a run has printed its report on stdout and
nothing on stderr, its answer is recorded: the exact stdout text and exit code, under a key
of everything the command line and the process see (the arguments, the working directory,
the environment, which streams are terminals, the Python and torchlint versions), with the
stat of every input the answer came from: the checked files, the modules the project index
read or looked for and the `__init__.py` markers that named them, every config file name in
every directory above them (present or not), the settings roots (a new requirements file
changes the torch floor), git's index (a cache directory git tracks is refused with a
warning), and the checked files' lint-cache entries. The next
identical run stats those inputs and, when all are as they were, prints the recorded text
and exits with the recorded code: no click, no settings, no rule is imported.
Anything else (a flag not listed in `_FLAGS`/`_VALUED`, a directory, stdin, a changed input)
goes the normal way, which records afresh.

A checked file is compared by its bytes: its stat answers only when it was recorded outside
the racy window (git's "racy clean" rule, as in torchlint.cache), and otherwise (saved again
unchanged, restored by pre-commit's stash, touched, just written) its content hash is checked
against the hash of the bytes the answer came from. Other inputs modified within the last
seconds are never recorded: an edit that keeps size and mtime cannot be missed. Nor is an
input that changed during the run: a module or settings file the run read must still hold
the bytes it read, and the settings file names must have the stat they had as the run began.
A settings root is compared by the names of its requirements files, not by the directory's
stat, which every atomic save in it changes. The records live in the user's cache directory
next to the MAC key (torchlint.integrity), in a directory of mode 0700 and a file of mode
0600 that this user owns; `marshal` reads them (no import cost), which is only safe because
nothing but this user can write there. A record whose directory lies inside the checked
tree is neither read nor written."""

from __future__ import annotations

import marshal
import os
import stat
import sys
import time

from torchlint import __version__, settings_reads

TYPE_CHECKING = False  # typing costs more to import than a whole replay
if TYPE_CHECKING:
    from typing import Any, Optional

    from torchlint.api import CheckReport

    Stat = Optional[tuple[int, ...]]

# 3: deps include package markers, settings files by the bytes read; 2: checked files by
# content, settings roots by their requirements files
_FORMAT = 3
_RACY_SECONDS = 2.0
_MAX_RECORDS = 32  # one file, bounded: pre-commit runs on ever-changing file lists
_MAX_TEXT = 1 << 20  # characters of recorded stdout
_MAX_BYTES = 16 << 20
_FLAGS = frozenset({"-q", "--quiet", "--exit-zero", "--statistics"})
_VALUED = frozenset({"--output-format", "--select", "--extend-select", "--ignore", "--color"})
# Formats whose text depends on nothing but the findings, the files and the flags (not on
# the git root, not written as CI commands).
_FORMATS = frozenset({"full", "concise", "grouped", "json", "json-lines", "pylint", "junit", "rdjson"})
_VOLATILE_ENV = frozenset({"_", "OLDPWD", "SHLVL"})  # differ between shells, read by nothing here
CONFIG_NAMES = (".torchlint.toml", "torchlint.toml", "pyproject.toml")  # torchlint.config.CONFIG_FILES
ROOT_NAMES = ("pyproject.toml", "setup.cfg")  # torchlint.project_torch reads these, and requirements*.txt

_pending: "Optional[tuple[Any, ...]]" = None  # this process's key, when its run may be recorded
_spoiled = False  # something went to stderr: the run is not recorded
# The settings files above the checked files as this run began, before the settings read
# them: one edited while the run went on must not be recorded with the answer it did not give.
_early: "dict[str, Stat]" = {}


def check_paths(argv: list[str]) -> Optional[list[str]]:
    """The files a `check` command line names, or None when this module must not answer it."""
    if not argv or argv[0] != "check":
        return None
    paths: list[str] = []
    i = 1
    while i < len(argv):
        arg = argv[i]
        name, eq, value = arg.partition("=")
        if arg in _FLAGS:
            pass
        elif name in _VALUED:
            if not eq:
                i += 1
                if i == len(argv):
                    return None
                value = argv[i]
            if name == "--output-format" and value not in _FORMATS:
                return None
        elif arg.startswith("-"):  # any other option, `-` (stdin) and `--`
            return None
        else:
            paths.append(arg)
        i += 1
    return paths or None  # no path: the working directory is walked


def user_dir() -> Optional[str]:
    """Where records live: beside the MAC key (kept in step with integrity.key_path, which
    costs hashlib to import)."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if xdg and os.path.isabs(xdg):
        base = xdg
    else:
        home = os.path.expanduser("~")
        if not home or home == "~" or not os.path.isabs(home):
            return None
        base = os.path.join(home, ".cache")
    return os.path.join(base, "torchlint", "replay")


# How an input is compared: its stat, its target's stat, its type only, the names of the
# requirements files a directory lists, a checked file's content (its stat when that proves
# it), the path it resolves to.
_LSTAT, _FOLLOW, _KIND, _LISTING, _CONTENT, _REAL = 0, 1, 2, 3, 4, 5
_MAX_INPUT = 64 << 20  # bytes of a checked file compared by content


def _stat(path: str, how: int = _LSTAT) -> Stat:
    try:
        st = os.stat(path) if how == _FOLLOW else os.lstat(path)
    except (OSError, ValueError):
        return None
    if how == _KIND:
        return (stat.S_IFMT(st.st_mode),)
    return st.st_mode, st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _key(argv: list[str], cwd: str) -> tuple[Any, ...]:
    env = tuple(sorted((k, v) for k, v in os.environ.items() if k not in _VOLATILE_ENV))
    ttys = tuple(_isatty(fd) for fd in (0, 1, 2))
    return (_FORMAT, __version__, tuple(sys.version_info[:2]), sys.executable, cwd, tuple(argv), env, ttys)


def _isatty(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False


def _trusted_dir(directory: str, paths: list[str]) -> bool:
    """A record directory this user alone can write, outside the checked files' tree."""
    real = os.path.realpath(directory)
    for path in [os.getcwd(), *(os.path.dirname(os.path.realpath(p)) for p in paths)]:
        if real == path or real.startswith(path.rstrip(os.sep) + os.sep):
            return False
    try:
        st = os.lstat(directory)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and not st.st_mode & 0o077 and st.st_uid == os.geteuid()


def _load(directory: str) -> dict[Any, Any]:
    data = _read(os.path.join(directory, f"records-{__version__}.bin"), _MAX_BYTES, private=True)
    if data is None:
        return {}
    try:
        records = marshal.loads(data)
    except (ValueError, EOFError, TypeError):
        return {}
    return records if type(records) is dict else {}


def _valid(record: Any) -> bool:
    return (type(record) is tuple and len(record) == 3 and type(record[0]) is str and type(record[1]) is int
            and type(record[2]) is tuple)


def serve(argv: list[str]) -> None:
    """Answer `argv` from its record and exit, or return (after noting that the normal run
    may record its answer)."""
    global _pending
    _early.clear()
    settings_reads.watch(False)
    paths = check_paths(argv)
    directory = user_dir()
    if paths is None or directory is None or sys.stdout is None or not hasattr(os, "geteuid"):
        return
    try:
        key = _key(argv, os.path.realpath(os.getcwd()))
    except OSError:
        return
    _pending = key
    settings_reads.watch(True)
    record: Any = _load(directory).get(key) if _trusted_dir(directory, paths) else None
    if not _valid(record) or not all(type(item) is tuple and len(item) == 3 and _unchanged(*item)
                                     for item in record[2]):
        dirs = {os.path.dirname(os.path.realpath(p)) for p in paths} | {os.path.realpath(os.getcwd())}
        _early.update((path, _stat(path)) for d in _ancestors(dirs) for path in _settings_files(d))
        return
    try:
        sys.stdout.write(record[0])
        sys.stdout.flush()
    except (OSError, ValueError) as exc:
        _write_failed(exc)
    raise SystemExit(record[1])


def _unchanged(path: Any, how: Any, recorded: Any) -> bool:
    """Is the input as it was when the answer was recorded?"""
    if how == _LISTING:
        return _requirements(path) == recorded
    if how == _REAL:
        try:
            return os.path.realpath(os.path.abspath(path)) == recorded
        except (OSError, ValueError):
            return False
    if how != _CONTENT:
        return _stat(path, how) == recorded
    if type(recorded) is not tuple or len(recorded) != 3:
        return False
    stat_then, digest, trusted = recorded
    now = _stat(path)
    if now is None or not stat.S_ISREG(now[0]):
        return False
    if trusted and now == stat_then:
        return True  # as git's index does: a stat recorded outside the racy window proves the bytes
    data = _read(path)  # saved again, restored by pre-commit, touched: the same bytes are the same answer
    if data is None:
        return False
    from torchlint.hashing import content_hash

    return content_hash(data) == digest


def _read(path: str, limit: int = _MAX_INPUT, private: bool = False, follow: bool = False) -> Optional[bytes]:
    """A regular file's bytes, not through a symlink (unless `follow`), at most `limit` of
    them, or None. Opened non-blocking: a FIFO put there cannot hang the run. `private`: only
    a file of this user's that no one else can read or write."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | (0 if follow else getattr(os, "O_NOFOLLOW", 0))
    try:
        fd = os.open(path, flags)
    except (OSError, ValueError):
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit or (
                private and (st.st_mode & 0o077 or st.st_uid != os.geteuid())):
            return None
        chunks, size = [], 0
        while size <= limit:  # bounded: the file may grow after the fstat
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks) if size <= limit else None
    except OSError:
        return None
    finally:
        os.close(fd)


def _requirements(root: str) -> Optional[tuple[str, ...]]:
    """The requirements*.txt names a settings root lists (torchlint.project_torch reads them)."""
    try:
        return tuple(settings_reads.requirements_names(root))
    except OSError:
        return None


def _write_failed(exc: BaseException) -> None:
    """As the normal path reports it (cli._output_failed): exit 2 with a message."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        sys.stderr.write(f"error: cannot write the report to standard output: {exc}\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass
    raise SystemExit(2)


def spoil() -> None:
    """The run wrote to stderr (a warning, an error): its answer is not recorded."""
    global _spoiled
    _spoiled = True


def pending() -> bool:
    return _pending is not None and not _spoiled


def record_report(report: CheckReport, text: str, code: int, color: bool) -> None:
    """Record a finished `check` (cli._finish_report) whose only output is `text` on stdout."""
    if not pending() or (not color and "\x1b" in text):  # click strips those: not the bytes we hold
        return
    if any(r.timed_out or r.internal_error for r in report.results):
        return  # as the lint cache: a file past lint-timeout, or a rule that failed, is tried again
    from torchlint.output.ci_safe import neutralize  # the bytes the stream filter lets out

    resolver, root = report.resolver, report.cache_root
    files = [t.path for t in report.tasks]
    roots = sorted({str(resolver.default.root), *(str(resolver.for_file(p).root) for p in files)})
    deps: dict[str, Optional[str]] = {}
    for result in report.results:
        for dep, digest in result.deps.items():
            if deps.setdefault(dep, digest) != digest:
                return  # two files saw different bytes there: it changed during the run
    entries: list[str] = []
    if root is not None:
        from torchlint.cache import entry_file  # imported already: the run used the cache

        entries = [entry_file(root, path) for path in files]
    digests = {t.path: r.digest for t, r in zip(report.tasks, report.results) if r is not None and r.digest}
    record(neutralize(text), code, files, deps, roots, entries,
           [str(report.cwd), *roots, *([str(root)] if root is not None else [])], digests)


def record(text: str, code: int, files: list[str], deps: dict[str, Optional[str]], roots: list[str],
           cache_entries: list[str], untrusted: list[str], digests: Optional[dict[str, str]] = None) -> bool:
    """Record this run's answer (stdout `text`, exit `code`) under its key. `files`: the
    checked files; `deps`: what the project index read (path -> content hash of the bytes
    read), looked for (None) or saw as a package marker (an existence token); `roots`: the
    settings roots; `untrusted`: directories the record must not lie in (the project, the cache);
    `digests`: the content hash of the bytes each checked file's findings came from (a run
    with a file without one is not recorded).
    Returns whether it was recorded."""
    directory = user_dir()
    if _pending is None or _spoiled or directory is None or len(text) > _MAX_TEXT:
        return False
    named = check_paths(list(_pending[5])) or []
    if {os.path.abspath(p) for p in named} != {os.path.abspath(p) for p in files}:
        return False  # a directory was walked: its listing is an input this record cannot hold
    inputs = _inputs(files, deps, roots, cache_entries, digests or {})
    if inputs is None:
        return False
    from torchlint import integrity  # the record goes only where a cache key can live

    real = os.path.realpath(directory)
    if integrity.load_key(untrusted) is None or any(
            real == r or real.startswith(r.rstrip(os.sep) + os.sep) for r in map(os.path.realpath, untrusted)):
        return False
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
    except OSError:
        return False
    if not _trusted_dir(directory, files):
        return False
    records = _load(directory)
    records.pop(_pending, None)
    while len(records) >= _MAX_RECORDS:
        records.pop(next(iter(records)))
    records[_pending] = (text, code, inputs)
    _write(directory, marshal.dumps(records))
    return True


def _inputs(files: list[str], deps: dict[str, Optional[str]], roots: list[str], cache_entries: list[str],
            digests: dict[str, str]) -> Optional[tuple[tuple[str, int, Any], ...]]:
    """(path, how it is compared, what it was) of every input, or None when one cannot be
    recorded safely: a checked file that is not a regular file reached without symlinks, or
    whose bytes are not the ones linted; a module the index read whose bytes are not the ones
    it read; a settings file changed since the run began; another input modified too recently
    to tell a later edit from it."""
    now = time.time()
    items: dict[str, tuple[str, int, Any]] = {}

    def add(path: str, how: int = _LSTAT, racy: bool = True, key: Optional[str] = None) -> bool:
        st = _stat(path, how)
        items[key or path] = (path, how, st)
        ok = st is None or how == _KIND or not racy or _settled(st, now)
        if ok and how == _LSTAT and st is not None and stat.S_ISLNK(st[0]):  # a linked config: its target too
            return add(path, _FOLLOW, racy, key=path + "\0target")
        return ok

    dirs: set[str] = {os.path.realpath(os.getcwd())}
    if not _checked_files(files, digests, now, items, dirs):
        return None
    if not all(add(os.path.abspath(dep), _FOLLOW) and _as_read(dep, digest) for dep, digest in deps.items()):
        return None
    for directory in _ancestors(dirs):
        if not all(add(os.path.join(directory, name)) for name in CONFIG_NAMES):
            return None
        # A cache directory git starts tracking is refused with a warning: the index
        # changes (replaced whole by git, so no racy window); a repository appearing too.
        if add(os.path.join(directory, ".git"), _KIND) and items[os.path.join(directory, ".git")][2]:
            add(os.path.join(directory, ".git", "index"), racy=False)
    for root in roots:  # its requirements files by name: one added or removed changes the torch floor
        if not all(add(os.path.join(root, name)) for name in ROOT_NAMES):
            return None
        names = _requirements(root)
        if names is None:
            return None
        items[root] = (root, _LISTING, names)
        if not all(add(os.path.join(root, name), _FOLLOW) for name in names):
            return None
    for entry in cache_entries:  # the checked files' lint-cache entries
        add(entry, racy=False)  # replaced atomically, never edited in place: a new inode
    return None if _changed_during_run(items) else tuple(items.values())


def _changed_during_run(items: dict[str, tuple[str, int, Any]]) -> bool:
    """A settings file's stat since the run began, its bytes or a requirements listing since
    the run read them: the answer came from what was there before."""
    return (any(items[path][2] != st for path, st in _early.items() if path in items and items[path][1] == _LSTAT)
            or not all(_as_read(path, digest) for path, digest in settings_reads.read.items())
            or any(_requirements(root) != names for root, names in settings_reads.listed.items()))


def _as_read(dep: str, digest: Optional[str]) -> bool:
    """Are a file's bytes now the ones the run read (`digest`; None: it found nothing usable;
    a package marker's existence token)? Read between two stats, so a write in between is
    seen; only a regular file is opened (a FIFO put there would block)."""
    from torchlint.hashing import EXISTS, EXISTS_UNREAD, MISSING, content_hash

    before = _stat(dep, _FOLLOW)
    regular = before is not None and stat.S_ISREG(before[0])
    if digest in (EXISTS, EXISTS_UNREAD, MISSING):  # a package marker: still one, or still none
        return regular == (digest != MISSING)  # (its stat is recorded too)
    if digest is None:  # found unusable: still so, unless a module appeared during the run
        return not regular
    data = _read(dep, follow=True) if regular else None  # the run followed links too
    return data is not None and _stat(dep, _FOLLOW) == before and content_hash(data) == digest


def _checked_files(files: list[str], digests: dict[str, str], now: float, items: dict[str, tuple[str, int, Any]],
                   dirs: set[str]) -> bool:
    """Add each checked file's content and resolved path to `items`, its directory to `dirs`;
    False when one cannot be recorded (reached through a link, not the bytes linted)."""
    for path in files:
        absolute = os.path.abspath(path)
        if os.path.realpath(absolute) != absolute:
            return False
        content = _content(path, digests.get(path), now)
        if content is None:
            return False
        items[path] = (path, _CONTENT, content)
        items[path + "\0real"] = (path, _REAL, absolute)  # no directory on its way replaced by a link
        dirs.add(os.path.dirname(absolute))
    return True


def _content(path: str, digest: Optional[str], now: float) -> Optional[tuple[Stat, str, bool]]:
    """(stat, content hash, whether the stat alone proves the bytes) of a checked file whose
    bytes now are the ones its findings came from (`digest`), or None: no digest, or the file
    changed since it was read. Read between two stats, so a write in between is seen."""
    if digest is None:
        return None
    before = _stat(path)
    if before is None or not stat.S_ISREG(before[0]):
        return None
    data = _read(path)
    if data is None or _stat(path) != before:
        return None
    from torchlint.hashing import content_hash

    if content_hash(data) != digest:
        return None
    return before, digest, _settled(before, now)


def _settings_files(directory: str) -> list[str]:
    return [os.path.join(directory, name) for name in (*CONFIG_NAMES, *ROOT_NAMES[1:])]


def _settled(st: tuple[int, ...], now: float) -> bool:
    """Modified longer ago than the racy window: a later edit cannot keep this stat."""
    return now - st[4] / 1e9 >= _RACY_SECONDS


def _ancestors(dirs: set[str]) -> list[str]:
    """Every directory at or above one of `dirs`, once each."""
    found: dict[str, None] = {}
    for directory in sorted(dirs):
        while directory not in found:
            found[directory] = None
            parent = os.path.dirname(directory)
            if parent == directory:
                break
            directory = parent
    return list(found)


def _write(directory: str, data: bytes) -> None:
    path = os.path.join(directory, f"records-{__version__}.bin")
    tmp = os.path.join(directory, f".records-{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
