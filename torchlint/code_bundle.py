"""torchlint's own compiled modules in one file, for the command line: an import served from
`torchlint/__pycache__/bundle.<cache tag>[.opt-N].bin` skips the path search, the open and
the read of the module's .pyc (a one-file check imports ~100 modules; with the bundle its
cold run is ~4 ms shorter). The console script installs it after the recorded-answer check
(entry.py) and saves it at the end of the run; nothing else (the language server, the flake8
plugin, the library) uses it.

Trust: the file sits where the interpreter's own .pyc files do and holds what they hold,
code compiled from the sources as the import system compiles them, read with marshal as
they are. No .pyc is copied: one written while a same-size edit landed passes Python's own
check, and bundled it would outlive its deletion. Freshness: each entry records its source's
stamp (mtime, ctime, size and inode: `cp -p` or `touch -r` over an edit is seen) and its
directory's mtime (a package directory or an extension module appearing beside it would take
precedence in a plain import); a module whose stamp differs is imported the usual way, and
the run that imported it rewrites the file (as Python writes a .pyc: not under
PYTHONDONTWRITEBYTECODE, silently where the directory is read-only). A source modified in the
last two seconds waits for a later run. A file that does not read back whole, or an entry of
the wrong shape, is ignored. The format is private: header, marshalled index, bodies."""

from __future__ import annotations

import _imp
import marshal
import os
import stat
import sys
import time
from importlib.machinery import ModuleSpec, SourceFileLoader
from types import CodeType

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional

    # (mtime_ns, ctime_ns, size, inode) of the source, mtime_ns of its directory
    Stamp = tuple[int, int, int, int, int]
    # (is_package, path relative to the package, stamp, body)
    Entry = tuple[bool, str, Stamp, bytes]

# b"TLB1", the length of the head (4 bytes), the head: marshal of (bytecode magic, package
# directory, length of the index), the index: marshal of {name: (offset, length, is_package,
# path relative to the package, stamp)}, then the bodies.
_HEADER = b"TLB1"
_RACY_NS = 2 * 10**9  # a source modified this recently is not bundled yet (git's "racy clean")


class _BundledLoader(SourceFileLoader):
    """A source loader whose code comes from the bundle: `__file__`, `get_source` and the
    resource reader are the usual ones (the generator's `inspect.getsource` reads the .py)."""

    def __init__(self, fullname: str, path: str, body: bytes) -> None:
        super().__init__(fullname, path)
        self._body = body

    def get_code(self, fullname: str) -> Optional[CodeType]:
        try:
            code = marshal.loads(self._body)
        except (ValueError, EOFError, TypeError):
            code = None
        if type(code) is not CodeType:  # a damaged entry: the usual .pyc or source
            return super().get_code(fullname)
        _imp._fix_co_filename(code, self.path)  # type: ignore[attr-defined]  # as for a .pyc: the tree may have moved
        return code


class BundleFinder:
    """First on `sys.meta_path`: answers for the modules of `prefix` that the bundle holds
    with a fresh source, and leaves every other import to the usual finders."""

    def __init__(self, root: str, prefix: str, index: dict, fd: int, base: int) -> None:
        self.root, self.prefix, self.index, self.fd, self.base = root, prefix, index, fd, base
        self.stale = False  # an entry's source changed: save() rewrites the file
        self.directories: dict[str, Optional[int]] = {}  # directory -> mtime_ns, once a run

    def body(self, offset: int, length: int) -> bytes:
        try:
            return os.pread(self.fd, length, self.base + offset)
        except OSError:
            return b""  # the loader falls back to the .pyc

    def find_spec(self, name: str, path: object = None, target: object = None) -> Optional[ModuleSpec]:
        entry = self.index.get(name)
        if entry is None:
            return None
        try:
            offset, length, is_package, relative, stamp = entry
            origin = os.path.join(self.root, relative)
        except (TypeError, ValueError):  # a damaged index entry
            return None
        if stamp_of(origin, self.directories) != stamp:
            self.stale = True
            return None
        spec = ModuleSpec(name, _BundledLoader(name, origin, self.body(offset, length)),
                          origin=origin, is_package=is_package)
        spec.has_location = True  # sets __file__
        if is_package:
            spec.submodule_search_locations = [os.path.dirname(origin)]
        return spec


def stamp_of(source: str, directories: dict[str, Optional[int]]) -> Optional[Stamp]:
    """The source's stamp now, None when it is not there; `directories` memoizes each
    directory's mtime for the run."""
    try:
        directory = os.path.dirname(source)
        st = os.stat(source)
        if directory not in directories:
            directories[directory] = os.stat(directory).st_mtime_ns
    except (OSError, ValueError, TypeError):  # absent, or a damaged entry's path (a NUL)
        return None
    folder = directories[directory]
    return None if folder is None else (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino, folder)


_installed: Optional[tuple[BundleFinder, int, str]] = None  # (finder, pid, bundle path)


def bundle_path(root: str) -> str:
    """Named as .pyc files are: by interpreter and optimization level (-O)."""
    level = f".opt-{sys.flags.optimize}" if sys.flags.optimize else ""
    return os.path.join(root, "__pycache__", f"bundle.{sys.implementation.cache_tag}{level}.bin")


def install(root: str, prefix: str = "torchlint") -> None:
    """Serve `prefix`'s modules from the bundle beside `root` (the package directory) when it
    reads back whole; remember to save it either way. Safe to call twice."""
    global _installed
    if _installed is not None or sys.implementation.cache_tag is None or sys.pycache_prefix:
        return
    path = bundle_path(root)
    index, fd, base = _read(path, os.path.realpath(root))  # one bundle however the path is spelled
    finder = BundleFinder(root, prefix, index, fd, base)
    if index:
        sys.meta_path.insert(0, finder)
    _installed = (finder, os.getpid(), path)


def _magic() -> bytes:
    import importlib._bootstrap_external as external  # in sys.modules already: the import system

    return bytes(external.MAGIC_NUMBER)


def _read(path: str, root: str) -> tuple[dict, int, int]:
    """(index, open descriptor, offset of the bodies), or ({}, -1, 0) for a file that is absent,
    not a regular file, of another interpreter or package directory, or damaged. Bodies are
    read when imported."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return {}, -1, 0
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError("not a regular file")
        data = os.pread(fd, 65536, 0)
        if data[:4] != _HEADER:
            raise ValueError("not a bundle")
        start = 8 + int.from_bytes(data[4:8], "little")
        magic, recorded_root, index_length = marshal.loads(data[8:start])
        if magic != _magic() or recorded_root != root:
            raise ValueError("another interpreter or package directory")
        packed = data[start:start + index_length]
        if len(packed) < index_length:
            packed += os.pread(fd, index_length - len(packed), start + len(packed))
        index = marshal.loads(packed)
        base = start + index_length
        if not isinstance(index, dict) or not all(_well_formed(e, st.st_size - base) for e in index.values()):
            raise ValueError("damaged")
    except (OSError, ValueError, EOFError, TypeError):
        os.close(fd)
        return {}, -1, 0
    return index, fd, base


def _well_formed(entry: object, room: int) -> bool:
    return (type(entry) is tuple and len(entry) == 5 and type(entry[0]) is int and type(entry[1]) is int
            and 0 <= entry[0] and 0 < entry[1] and entry[0] + entry[1] <= room and type(entry[3]) is str
            and type(entry[4]) is tuple and len(entry[4]) == 5)


def save() -> None:
    """Rewrite the bundle when this run imported a module of the prefix the usual way (a new
    module, or one whose source changed) and can add it: its entries then are the fresh old
    ones plus every such module, compiled from its source. Only the process that installed
    it saves."""
    if _installed is None:
        return
    finder, pid, path = _installed
    if pid != os.getpid() or sys.dont_write_bytecode:
        return
    imported = [m for name, m in list(sys.modules.items())
                if (name == finder.prefix or name.startswith(finder.prefix + "."))
                and type(getattr(m, "__loader__", None)) is SourceFileLoader]
    if not finder.stale and all(m.__name__ in finder.index for m in imported):
        return
    if not os.access(os.path.dirname(path), os.W_OK):
        return  # a read-only install: compiling ~100 modules for nothing, every run
    directories: dict[str, Optional[int]] = {}
    entries: dict[str, Entry] = {}
    for name, (offset, length, is_package, relative, stamp) in finder.index.items():
        if stamp_of(os.path.join(finder.root, relative), directories) == stamp:
            entries[name] = (is_package, relative, stamp, finder.body(offset, length))
    for module in imported:
        if module.__name__ in entries:
            continue  # imported before the bundle was installed (entry.py), and still fresh
        entry = _compiled(module, finder.root, directories)
        if entry is not None:
            entries[module.__name__] = entry
    entries = {name: e for name, e in entries.items() if e[3]}
    if entries.keys() != finder.index.keys() or finder.stale:  # not when nothing can be added
        _write(path, os.path.realpath(finder.root), entries)


def _compiled(module: object, root: str, directories: dict[str, Optional[int]]) -> Optional[Entry]:
    """The module's entry, compiled from its source as the import system compiles it, when the
    source kept one stamp while it was read and was not modified in the last seconds (an edit
    in the same timestamp tick would keep the stamp); None otherwise. No .pyc is trusted: one
    compiled while a same-size edit landed matches its source by Python's own check."""
    source = getattr(module, "__file__", None)
    name = getattr(module, "__name__", None)
    if not isinstance(source, str) or not isinstance(name, str) or not source.endswith(".py") \
            or os.path.dirname(source)[:len(root)] != root:
        return None
    stamp = stamp_of(source, directories)
    if stamp is None or os.path.isdir(source[:-3]) or time.time_ns() - stamp[1] < _RACY_NS:
        return None  # a directory of its name may become a package, which a plain import prefers
    try:
        with open(source, "rb") as f:
            data = f.read()
        code = SourceFileLoader(name, source).source_to_code(data, source)
    except (OSError, SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    if stamp_of(source, {}) != stamp:
        return None  # changed while it was read
    return os.path.basename(source) == "__init__.py", os.path.relpath(source, root), stamp, marshal.dumps(code)


def _write(path: str, root: str, entries: dict[str, Entry]) -> None:
    index, bodies, offset = {}, [], 0
    for name, (is_package, relative, stamp, body) in sorted(entries.items()):
        index[name] = (offset, len(body), is_package, relative, stamp)
        bodies.append(body)
        offset += len(body)
    packed = marshal.dumps(index)
    head = marshal.dumps((_magic(), root, len(packed)))
    from torchlint.safe_io import replace_exclusively  # imported already by the run itself

    try:
        replace_exclusively(path, _HEADER + len(head).to_bytes(4, "little") + head + packed + b"".join(bodies), 0o644)
    except OSError:
        pass  # read-only, full: the next run imports the usual way
