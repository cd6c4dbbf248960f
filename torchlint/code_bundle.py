"""torchlint's own compiled modules in one file, for the command line: an import served from
`torchlint/__pycache__/bundle.<cache tag>.bin` skips the path search, the open and the read of
the module's .pyc (~90 us a module; a one-file check imports ~100 of them, ~8 ms of its
~55). The console script installs it after the recorded-answer check (entry.py) and saves it
at the end of the run; nothing else (the language server, the flake8 plugin, the library)
uses it.

Trust: the file holds what the interpreter's own .pyc files beside it hold (their bodies,
copied byte for byte), and is read with marshal as they are. Freshness: each entry records
its source's path, mtime (ns) and size; a module whose source differs is imported the usual
way, and the run that imported it rewrites the file (as Python writes a .pyc: not under
PYTHONDONTWRITEBYTECODE, silently where the directory is read-only). A file that does not
read back whole is ignored. The format is private: header, marshalled index, bodies."""

from __future__ import annotations

import marshal
import os
import sys
from importlib.machinery import ModuleSpec, SourceFileLoader

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import CodeType
    from typing import Optional

# b"TLB1", the length of the head (4 bytes), the head: marshal of (bytecode magic, package
# directory, length of the index), the index: marshal of {name: (offset, length, is_package,
# path relative to the package, source mtime_ns, source size)}, then the bodies.
_HEADER = b"TLB1"


class _BundledLoader(SourceFileLoader):
    """A source loader whose code comes from the bundle: `__file__`, `get_source` and the
    resource reader are the usual ones (the generator's `inspect.getsource` reads the .py)."""

    def __init__(self, fullname: str, path: str, body: bytes) -> None:
        super().__init__(fullname, path)
        self._body = body

    def get_code(self, fullname: str) -> Optional[CodeType]:
        try:
            return marshal.loads(self._body)
        except (ValueError, EOFError, TypeError):  # a damaged entry: the usual .pyc or source
            return super().get_code(fullname)


class BundleFinder:
    """First on `sys.meta_path`: answers for the modules of `prefix` that the bundle holds
    with a fresh source, and leaves every other import to the usual finders."""

    def __init__(self, root: str, prefix: str, index: dict, fd: int, base: int) -> None:
        self.root, self.prefix, self.index, self.fd, self.base = root, prefix, index, fd, base
        self.stale = False  # an entry's source changed: save() rewrites the file

    def body(self, offset: int, length: int) -> bytes:
        try:
            return os.pread(self.fd, length, self.base + offset)
        except OSError:
            return b""  # the loader falls back to the .pyc

    def find_spec(self, name: str, path: object = None, target: object = None) -> Optional[ModuleSpec]:
        entry = self.index.get(name)
        if entry is None:
            return None
        offset, length, is_package, relative, mtime_ns, size = entry
        origin = os.path.join(self.root, relative)
        try:
            st = os.stat(origin)
        except OSError:
            self.stale = True
            return None
        if st.st_mtime_ns != mtime_ns or st.st_size != size:
            self.stale = True
            return None
        spec = ModuleSpec(name, _BundledLoader(name, origin, self.body(offset, length)),
                          origin=origin, is_package=is_package)
        spec.has_location = True  # sets __file__
        if is_package:
            spec.submodule_search_locations = [os.path.dirname(origin)]
        return spec


_installed: Optional[tuple[BundleFinder, int, str]] = None  # (finder, pid, bundle path)


def bundle_path(root: str) -> str:
    """Named as the .pyc files it copies are: by interpreter and optimization level (-O)."""
    level = f".opt-{sys.flags.optimize}" if sys.flags.optimize else ""
    return os.path.join(root, "__pycache__", f"bundle.{sys.implementation.cache_tag}{level}.bin")


def install(root: str, prefix: str = "torchlint") -> None:
    """Serve `prefix`'s modules from the bundle beside `root` (the package directory) when it
    reads back whole; remember to save it either way. Safe to call twice."""
    global _installed
    if _installed is not None or sys.implementation.cache_tag is None or sys.pycache_prefix:
        return
    path = bundle_path(root)
    index, fd, base = _read(path, root)
    finder = BundleFinder(root, prefix, index, fd, base)
    if index:
        sys.meta_path.insert(0, finder)
    _installed = (finder, os.getpid(), path)


def _magic() -> bytes:
    import importlib._bootstrap_external as external  # in sys.modules already: the import system

    return bytes(external.MAGIC_NUMBER)


def _read(path: str, root: str) -> tuple[dict, int, int]:
    """(index, open descriptor, offset of the bodies), or ({}, -1, 0) for a file that is absent,
    of another interpreter or package directory, or damaged. Bodies are read when imported."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return {}, -1, 0
    try:
        size = os.fstat(fd).st_size
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
        if not isinstance(index, dict) or any(base + offset + length > size for offset, length, *_ in index.values()):
            raise ValueError("truncated")
    except (OSError, ValueError, EOFError, TypeError):
        os.close(fd)
        return {}, -1, 0
    return index, fd, base


def save() -> None:
    """Rewrite the bundle when this run imported a module of the prefix the usual way (a new
    module, or one whose source changed): its entries then are the fresh old ones plus every
    such module whose .pyc matches its source. Only the process that installed it saves."""
    if _installed is None:
        return
    finder, pid, path = _installed
    if pid != os.getpid() or sys.dont_write_bytecode:
        return
    imported = [m for name, m in list(sys.modules.items())
                if (name == finder.prefix or name.startswith(finder.prefix + "."))
                and type(getattr(m, "__loader__", None)) is SourceFileLoader]
    new = [m for m in imported if m.__name__ not in finder.index or finder.stale]
    if not new:
        return
    entries: dict[str, tuple[bool, str, int, int, bytes]] = {}
    for name, (offset, length, is_package, relative, mtime_ns, size) in finder.index.items():
        entries[name] = (is_package, relative, mtime_ns, size, finder.body(offset, length))
    for module in imported:
        body = _compiled(module, finder.root)
        if body is not None:
            entries[module.__name__] = body
    _write(path, finder.root, {name: e for name, e in entries.items() if e[4] and _fresh(finder.root, e)})


def _fresh(root: str, entry: tuple[bool, str, int, int, bytes]) -> bool:
    try:
        st = os.stat(os.path.join(root, entry[1]))
    except OSError:
        return False
    return st.st_mtime_ns == entry[2] and st.st_size == entry[3]


def _compiled(module: object, root: str) -> Optional[tuple[bool, str, int, int, bytes]]:
    """The module's entry from its .pyc, when that .pyc was compiled from the source as it is
    now (the timestamp check Python makes); None otherwise."""
    import importlib._bootstrap_external as external

    source = getattr(module, "__file__", None)
    if not isinstance(source, str) or not source.endswith(".py") or os.path.dirname(source)[:len(root)] != root:
        return None
    try:
        st = os.stat(source)
        with open(external.cache_from_source(source), "rb") as f:
            data = f.read()
    except (OSError, ValueError, NotImplementedError):
        return None
    header = (_magic(), (0).to_bytes(4, "little"), (int(st.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little"),
              (st.st_size & 0xFFFFFFFF).to_bytes(4, "little"))
    if data[:16] != b"".join(header):
        return None
    is_package = os.path.basename(source) == "__init__.py"
    return is_package, os.path.relpath(source, root), st.st_mtime_ns, st.st_size, data[16:]


def _write(path: str, root: str, entries: dict[str, tuple[bool, str, int, int, bytes]]) -> None:
    index, bodies, offset = {}, [], 0
    for name, (is_package, relative, mtime_ns, size, body) in sorted(entries.items()):
        index[name] = (offset, len(body), is_package, relative, mtime_ns, size)
        bodies.append(body)
        offset += len(body)
    packed = marshal.dumps(index)
    head = marshal.dumps((_magic(), root, len(packed)))
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        with open(temporary, "wb") as f:
            f.write(_HEADER + len(head).to_bytes(4, "little") + head + packed + b"".join(bodies))
        os.replace(temporary, path)  # readers see the old file or the new one, never half
    except OSError:
        try:
            os.unlink(temporary)
        except OSError:
            pass
