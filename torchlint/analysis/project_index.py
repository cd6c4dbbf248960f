"""The project index: what the other files of the checked project define, for the questions
one file's rules ask about names it imports (is this base class an nn.Module, what does this
imported helper do in its body, what does this imported factory return).

It is built lazily, per linted file, from the imports that file's questions reach: a name
`pkg.models.Net` (an absolute import, or `from .models import Net` resolved against the
file's package) is looked up as `pkg/models.py` or `pkg/models/__init__.py` under the search
roots (the directory above the file's top package, the file's own directory, then the
allowed roots that are not packages themselves), and the module found there is parsed and
kept for the process's later files, within a byte budget and while its size, mtime and
inode stay the same. A file's own tree is never parsed twice: questions
about its own names go to the semantic model. A lint that asks nothing of other files reads
nothing, so the cost is paid where a question needs it.

Every path probed, found or not, is recorded in `deps` with its content hash (None: absent),
and so are the `__init__.py` markers that decided the file's module name and search paths
(`EXISTS` or `MISSING`, as they were seen: a marker names a package by existing, whatever it
holds; `EXISTS_UNREAD` when the index also found it unusable as a module),
so the findings cache can tell when a file a result depends on has changed, appeared or
gone. What is read follows the rules of the tree walk: only regular files, only below the
allowed roots, at most max-file-size, never a stdlib or torch module. The allowed roots are
the checked paths (the directories named on the command line and those of the files named
there, resolved, and the git work tree of a file named there: Discovery.index_roots) and the
directory of the file's config file if it has one (api._index_roots),
never the working directory, so findings and the deps they record are
the same wherever a run starts; an editor's document also allows the working directory
(its workspace) and its own directory (`api.document_roots`). A candidate outside the
allowed roots is skipped unlooked-at and unrecorded: its content cannot change a finding.
With no allowed roots (a plain `lint_task`, stdin without a file name) the index is empty
and a file is judged on its own."""

from __future__ import annotations

import ast
import gc
import os
import stat
import sys
from collections import OrderedDict
from functools import lru_cache

from torchlint.analysis.imports import ImportTable
from torchlint.hashing import EXISTS, EXISTS_UNREAD, MISSING, content_hash
from torchlint.safe_io import DEFAULT_MAX_FILE_SIZE, RefusedFile, is_within, read_regular_file

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable, Optional, Union
    _FunctionNode = Union[ast.FunctionDef, ast.AsyncFunctionDef]

MAX_DEPTH = 12  # re-exports and base classes followed through at most this many modules
_NEVER = frozenset(sys.stdlib_module_names) | {"torch", "__future__", "numpy", "typing_extensions"}
_MEMO_SIZE = 64
# Source bytes of the parsed modules kept at once: a tree takes 26 bytes or more per source
# byte, so 64 large modules held a worker at 100 MB more than one copy of transformers'
# models/ needs. The budget keeps a worker's memory flat in the number of files it lints
# (512 KiB still grew it by 33 MB over 8 copies, 64 KiB by 19); few modules are asked for
# twice (2 of 15 loads over transformers' models/), and the newest is always kept.
_MEMO_BYTES = 64 * 1024
# Searches remembered, the oldest forgotten first. A search is keyed by the file's directory
# among its search paths, so it serves the files of one directory, which are linted one after
# another: more entries only grew a worker (4096 held 5 MB over 4 copies of transformers' models/).
_PROBED_SIZE = 256


class ModuleInfo:
    """One parsed module: its import aliases (relative imports resolved) and its top-level
    classes, functions and single-assignment values."""

    __slots__ = ("name", "path", "tree", "imports", "classes", "functions", "values")

    def __init__(self, name: str, path: str, tree: ast.Module, is_package: bool) -> None:
        self.name, self.path, self.tree = name, path, tree
        self.imports = ImportTable()
        self.imports.collect_module_level(tree)
        package = name if is_package else name.rpartition(".")[0]
        for node in _module_level(tree):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = relative_base(package, node.level, node.module)
                for alias in node.names:
                    if alias.name != "*" and base is not None:
                        self.imports.aliases[alias.asname or alias.name] = f"{base}.{alias.name}" if base else alias.name
        self.classes: dict[str, ast.ClassDef] = {}
        self.functions: dict[str, _FunctionNode] = {}
        self.values: dict[str, ast.AST] = {}
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                self.classes[node.name] = node
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions[node.name] = node
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                self.values[node.targets[0].id] = node.value

    def qualname(self, node: ast.AST) -> Optional[str]:
        """What `node` names here: an import, or a class/function/value of this module."""
        found = self.imports.qualname(node)
        if found is not None:
            return found
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name) and (node.id in self.classes or node.id in self.functions
                                           or node.id in self.values):
            return ".".join([p for p in (self.name, node.id) if p] + parts[::-1])
        return None

    def call_name(self, node: ast.AST) -> Optional[str]:
        return self.qualname(node.func) if isinstance(node, ast.Call) else None


def _module_level(tree: ast.Module) -> list[ast.stmt]:
    """Top-level statements and those under module-level if/try (guarded imports)."""
    out: list[ast.stmt] = []
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        out.append(node)
        if isinstance(node, (ast.If, ast.Try)):
            stack.extend(node.body)
            stack.extend(node.orelse)
            stack.extend(getattr(node, "finalbody", ()))
            for handler in getattr(node, "handlers", ()):
                stack.extend(handler.body)
    return out


def relative_base(package: str, level: int, module: Optional[str]) -> Optional[str]:
    """The absolute module `from <level dots><module> import ...` names in `package`."""
    parts = package.split(".") if package else []
    if level - 1 > len(parts):
        return None
    kept = parts[: len(parts) - (level - 1)]
    if module:
        kept.append(module)
    return ".".join(kept)


def module_name_of(path: str) -> tuple[str, str, bool]:
    """(dotted module name, the directory it is importable from, is a package) for a file,
    by the `__init__.py` files above it."""
    return _module_name_and_markers(path)[:3]


def _module_name_and_markers(path: str) -> tuple[str, str, bool, dict[str, Optional[str]]]:
    """`module_name_of`, and the markers it saw: each `__init__.py` above the file up to the
    first absent one, as `EXISTS` or `MISSING`. Recorded as seen, so an answer and its deps come
    from one look at the tree even when a marker appears while a run goes on."""
    directory, base = os.path.split(os.path.abspath(path))
    stem = base.rsplit(".", 1)[0]
    is_package = stem == "__init__"
    parts = [] if is_package else [stem]
    markers: dict[str, Optional[str]] = {}
    while True:
        marker = os.path.join(directory, "__init__.py")
        if not os.path.isfile(marker):
            markers[marker] = MISSING
            break
        markers[marker] = EXISTS
        directory, name = os.path.split(directory)
        parts.insert(0, name)
        if not name:
            break
    return ".".join(parts), directory, is_package, markers


# Parsed modules by resolved path, shared by every file linted in this process: a module
# imported by many files is parsed once. The stat signature drops an entry that changed.
_PARSED: "OrderedDict[str, tuple[tuple[int, int, int, int], str, Optional[ModuleInfo]]]" = OrderedDict()
_parsed_bytes = 0  # the source bytes of what _PARSED holds (the first item of each signature)


@lru_cache(maxsize=4096)
def _realpath(path: str) -> str:
    """`os.path.realpath`, once per path and process (it costs an lstat per component). A
    link changed later is still only followed to where it pointed when first resolved,
    which the allowed roots contain, so nothing outside them is read."""
    return os.path.realpath(path)


# Where each module was found, per search path: files linted one after another ask about the
# same imports. Forgotten at the start of each run (`new_run`), so a long-lived process (the
# language server) sees modules that appear or go between runs.
_PROBED: dict[tuple[str, tuple[str, ...], tuple[str, ...]], tuple[tuple[str, ...], Optional[tuple[str, bool]]]] = {}


def new_run() -> None:
    """Forget where modules were found (their parsed trees stay, checked by stat), and hand
    what the last run froze back to the cyclic GC, so a long-lived process (the language
    server) frees the cycles left by its earlier runs."""
    _PROBED.clear()
    _is_package.cache_clear()  # a long-lived process sees a package marker appear between runs
    gc.unfreeze()


# How many `_freeze` calls there have been, and how many there were at the last full
# collection: see `_freeze`.
_FREEZES = 0
_FREEZES_AT_COLLECT = 0


def _freeze() -> None:
    """`gc.freeze()`, and a full collection whenever the calls since the last one outnumber
    the calls before it: freezing also froze the cyclic garbage of the files linted since,
    which would otherwise grow a worker with every file it lints. Doubling keeps the cost
    amortised. Calls stand in for objects because `gc.get_freeze_count()` walks the whole
    frozen list (3 CPU-s over transformers' models/ when it was asked at every call)."""
    global _FREEZES, _FREEZES_AT_COLLECT
    if not gc.isenabled():
        return  # a batch lint (`gcpolicy.batch`) collects and freezes after each file
    gc.freeze()
    _FREEZES += 1
    if _FREEZES > 2 * _FREEZES_AT_COLLECT + 8:
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        _FREEZES_AT_COLLECT = _FREEZES


def _remember(real: str, parsed: tuple[tuple[int, int, int, int], str, Optional[ModuleInfo]]) -> None:
    """Keep a parsed module, forgetting the least recently used ones past the count or the
    byte budget (the newest is kept even when it alone is over the budget)."""
    global _parsed_bytes
    old = _PARSED.pop(real, None)
    if old is not None:
        _parsed_bytes -= old[0][0]
    _PARSED[real] = parsed
    _parsed_bytes += parsed[0][0]
    while len(_PARSED) > 1 and (len(_PARSED) > _MEMO_SIZE or _parsed_bytes > _MEMO_BYTES):
        _parsed_bytes -= _PARSED.popitem(last=False)[1][0][0]


@lru_cache(maxsize=256)
def _is_package(directory: str) -> bool:
    """Does `directory` hold an `__init__.py`? A checked directory is searched like a
    sys.path entry (`src/` of a src layout) unless it is a package: Python imports a
    package's modules from above it, as its files' own package root already does. Searched,
    every checked package would add its probes, and recorded deps, to every file's imports.
    Asked once per process, like the `__init__.py` files that name a module (`module_name_of`)."""
    return os.path.isfile(os.path.join(directory, "__init__.py"))


def _signature(st: os.stat_result) -> tuple[int, int, int, int]:
    """Size first (the memo's byte budget reads it); the ctime too: `cp -p` or a checkout
    within one timestamp tick keeps size and mtime, never the ctime."""
    return st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino


class ProjectIndex:
    """The index as one linted file sees it (see the module docstring)."""

    def __init__(self, path: str, roots: tuple[str, ...], max_bytes: int = DEFAULT_MAX_FILE_SIZE) -> None:
        self.path = os.path.abspath(path)
        self.roots = tuple(_realpath(r) for r in roots)
        self.max_bytes = max_bytes
        self.name, top, self.is_package, markers = _module_name_and_markers(path)
        search = [top, os.path.dirname(self.path), *(r for r in self.roots if not _is_package(r))]
        self.search = tuple(dict.fromkeys(_realpath(s) for s in search))
        # path -> content hash, None: absent. First the markers that decided the module name
        # and the search paths (adding app/__init__.py makes `import models`, or `from ..models`,
        # mean the models.py above app/), above the roots too: a stat, nothing read.
        self.deps: dict[str, Optional[str]] = {
            **markers, **{os.path.join(r, "__init__.py"): EXISTS if _is_package(r) else MISSING for r in self.roots}}
        self._modules: dict[str, Optional[ModuleInfo]] = {}  # dotted name -> module (kept alive)
        self._definitions: dict[str, Optional[tuple[ModuleInfo, ast.AST]]] = {}
        self._module_memo: dict[str, bool] = {}

    @property
    def package(self) -> str:
        return self.name if self.is_package else self.name.rpartition(".")[0]

    def relative_aliases(self, tree: ast.Module) -> dict[str, str]:
        """The linted file's relative imports, resolved: `from .models import Net` -> `pkg.models.Net`."""
        aliases: dict[str, str] = {}
        for node in _module_level(tree):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = relative_base(self.package, node.level, node.module)
                if base is None:
                    continue
                for alias in node.names:
                    if alias.name != "*":
                        aliases[alias.asname or alias.name] = f"{base}.{alias.name}" if base else alias.name
        return aliases

    # -- finding and loading modules ------------------------------------------------------
    def module(self, dotted: str) -> Optional[ModuleInfo]:
        """The module `dotted` of the project, or None (not found, not allowed, not Python)."""
        if dotted in self._modules:
            return self._modules[dotted]
        found = None
        if dotted and dotted.split(".", 1)[0] not in _NEVER:
            key = (dotted, self.search, self.roots)
            probed = _PROBED.get(key)
            if probed is None:
                if len(_PROBED) >= _PROBED_SIZE:  # bounded: a worker lints thousands of directories
                    del _PROBED[next(iter(_PROBED))]
                probed = _PROBED[key] = self._probe(dotted)
            absent, hit = probed
            for candidate in absent:
                self._note(candidate, None)
            if hit is not None:
                found = self._load(hit[0], dotted, hit[1])
        self._modules[dotted] = found
        return found

    def _note(self, path: str, digest: Optional[str]) -> None:
        """Record what a module candidate held (None: nothing usable), keeping what a marker
        there was seen to be: absent stays `MISSING`, a file becomes `EXISTS_UNREAD`."""
        seen = self.deps.get(path)
        if digest is None and seen in (MISSING, EXISTS_UNREAD):
            return
        self.deps[path] = EXISTS_UNREAD if digest is None and seen == EXISTS else digest

    def _probe(self, dotted: str) -> tuple[tuple[str, ...], Optional[tuple[str, bool]]]:
        """(the candidates found unusable, the first usable one and whether it is a package).
        A candidate outside the allowed roots is never read whatever it holds, so it is
        neither looked at nor recorded (recorded as absent, an existing file there would fail
        every cache check of the result); the search paths are resolved, so no stat is needed."""
        rel = dotted.replace(".", os.sep)
        absent: list[str] = []
        for root in self.search:
            for candidate, is_package in ((os.path.join(root, rel + ".py"), False),
                                          (os.path.join(root, rel, "__init__.py"), True)):
                if not is_within(candidate, self.roots):
                    continue
                if self._exists(candidate):
                    return tuple(absent), (candidate, is_package)
                absent.append(candidate)
        return tuple(absent), None

    def _exists(self, candidate: str) -> bool:
        """Is `candidate` (below the allowed roots) a regular file whose resolved path is
        below them too? Recorded when not: a module that appears later must invalidate what
        was concluded without it."""
        try:  # most candidates are absent: one stat says so, before resolving any link
            usable = stat.S_ISREG(os.stat(candidate).st_mode) and is_within(_realpath(candidate), self.roots)
        except OSError:
            usable = False
        if not usable:
            self._note(candidate, None)
        return usable

    def _load(self, path: str, dotted: str, is_package: bool) -> Optional[ModuleInfo]:
        real = _realpath(path)
        try:
            sig = _signature(os.stat(real))
            cached = _PARSED.get(real)
            if cached is not None and cached[0] == sig and (cached[2] is None or cached[2].name == dotted):
                _PARSED.move_to_end(real)
                self.deps[path] = cached[1]
                return cached[2]
            data = read_regular_file(real, self.max_bytes)
        except (OSError, RefusedFile):
            self._note(path, None)
            return None
        digest = content_hash(data)  # as the lint cache compares dependencies
        self.deps[path] = digest
        try:
            info: Optional[ModuleInfo] = ModuleInfo(dotted, path, ast.parse(data), is_package)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            info = None
        _remember(real, (sig, digest, info))
        # A kept tree is a million long-lived objects that every full collection would walk
        # again (it doubled the cold lint of a large tree): keep them out of the cyclic GC.
        # ASTs hold no cycles, so reference counting still frees them when they are dropped;
        # cycles frozen with them are collected once the frozen set has doubled (`_freeze`).
        _freeze()
        return info

    # -- names ----------------------------------------------------------------------------
    def definition(self, qualname: str, depth: int = 0) -> Optional[tuple[ModuleInfo, ast.AST]]:
        """Where `qualname` is defined in the project: (module, its ClassDef / FunctionDef /
        assigned value), following re-exports (`from .net import Net` in a package's
        `__init__.py`)."""
        if qualname in self._definitions:
            return self._definitions[qualname]
        self._definitions[qualname] = None  # a cycle of re-exports defines nothing
        found = self._find(qualname, depth) if depth < MAX_DEPTH else None
        self._definitions[qualname] = found
        return found

    def _find(self, qualname: str, depth: int) -> Optional[tuple[ModuleInfo, ast.AST]]:
        parts = qualname.split(".")
        if parts[0] in _NEVER or len(parts) < 2:
            return None
        for k in range(len(parts) - 1, 0, -1):
            module = self.module(".".join(parts[:k]))
            if module is None:
                continue
            if k != len(parts) - 1:
                return None  # `pkg.mod.Cls.attr`: a class attribute, not followed
            name = parts[k]
            node = module.classes.get(name) or module.functions.get(name) or module.values.get(name)
            if node is not None:
                return module, node
            alias = module.imports.aliases.get(name)
            if alias is not None and alias != qualname:
                return self.definition(alias, depth + 1)
            return None
        return None

    def class_def(self, qualname: str) -> Optional[tuple[ModuleInfo, ast.ClassDef]]:
        found = self.definition(qualname)
        return (found[0], found[1]) if found is not None and isinstance(found[1], ast.ClassDef) else None  # type: ignore[return-value]

    def function_def(self, qualname: str) -> Optional[tuple[ModuleInfo, _FunctionNode]]:
        found = self.definition(qualname)
        if found is not None and isinstance(found[1], (ast.FunctionDef, ast.AsyncFunctionDef)):
            return found  # type: ignore[return-value]
        return None

    def is_module_class(self, qualname: str, is_module_base: Callable[[str], bool], depth: int = 0) -> bool:
        """Does the project class `qualname` derive from nn.Module (or a framework base that
        `is_module_base` accepts), through bases defined in any file of the project?"""
        memo = self._module_memo.get(qualname)
        if memo is not None:
            return memo
        self._module_memo[qualname] = False  # a cycle of bases is not a module
        found = self.class_def(qualname) if depth < MAX_DEPTH else None
        result = False
        if found is not None:
            module, cls = found
            for base in cls.bases:
                qn = module.qualname(base)
                if qn is not None and (is_module_base(qn) or self.is_module_class(qn, is_module_base, depth + 1)):
                    result = True
                    break
        self._module_memo[qualname] = result
        return result

