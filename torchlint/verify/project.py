"""The user's project, for `--verify` findings that need its real objects (a class built as
the program builds it, then observed): a read-only snapshot of the project's Python sources
for the worker to import, and, per finding, what to import and how to build it.

Only `.py` files are copied, through the same safe reader as linting (regular files, no
symlinks followed, bounded sizes and counts), never `.git`, hidden directories or virtual
environments: the worker can import the project, but a credentials file that CI wrote into
the checkout is not there for the code to read and quote in its evidence. Everything from
the tree runs only inside the sandboxed worker (SECURITY.md).

Planning is static, in the parent: the module's dotted name from its path (packages are
the directories with an `__init__.py`; `sys.path` gets the project root and the directory
above the top package), the class enclosing the finding, and the constructor arguments:
none when `__init__` needs none, else the literal arguments of the first call site in the
project (`Net(128, depth=4)`)."""

from __future__ import annotations

import ast
import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass, field

from torchlint.diagnostics import Finding
from torchlint.safe_io import RefusedFile, read_regular_file
from torchlint.verify.callsites import literal_call

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional

MAX_FILES = 4000
MAX_FILE_BYTES = 5 * 2**20
MAX_TOTAL_BYTES = 64 * 2**20
_SKIP_DIRS = frozenset({"__pycache__", "node_modules", "site-packages", "build", "dist"})
# Rules whose finding is observed on an object built from the user's class (the observer
# beside each rule, Evidence.observe), and the attribute of `self` the judge reads.
IMPORTED = frozenset({"TL206", "TL402", "TL701", "TL702"})
# Rules whose verdict reads the project (TL601: what its torch.save calls store).
USES_PROJECT = IMPORTED | {"TL601"}


class ProjectTree:
    """The snapshot of one run: built once, shared by every finding and file."""

    def __init__(self, root: str) -> None:
        self.root = os.path.realpath(root)
        self._tmp = tempfile.TemporaryDirectory(prefix="torchlint-project-")
        os.chmod(self._tmp.name, 0o755)  # the worker's own uid must reach it (read-only)
        # The worker is granted the top-level entries of `grant`, so `src` itself, whose
        # listing the import system reads.
        self.grant = self._tmp.name
        self.snapshot = os.path.join(self._tmp.name, "src")
        self.files: dict[str, str] = {}  # relative path -> text
        self._copy()
        digest = hashlib.sha256()
        for rel in sorted(self.files):
            digest.update(rel.encode("utf-8", "surrogatepass") + b"\0" + hashlib.sha256(
                self.files[rel].encode("utf-8", "surrogatepass")).digest())
        self.digest = digest.hexdigest()
        self._trees: dict[str, Optional[ast.Module]] = {}

    def _copy(self) -> None:
        total = 0
        for top, dirs, names in os.walk(self.root, followlinks=False):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS
                             and not os.path.exists(os.path.join(top, d, "pyvenv.cfg")))
            for name in sorted(n for n in names if n.endswith(".py")):
                if len(self.files) >= MAX_FILES or total >= MAX_TOTAL_BYTES:
                    return
                path = os.path.join(top, name)
                try:
                    data = read_regular_file(path, MAX_FILE_BYTES, follow_symlinks=False)
                    text = data.decode("utf-8")
                except (OSError, RefusedFile, UnicodeDecodeError):
                    continue
                rel = os.path.relpath(path, self.root)
                target = os.path.join(self.snapshot, rel)
                os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
                with open(target, "xb") as fh:
                    fh.write(data)
                os.chmod(target, 0o644)
                self.files[rel] = text
                total += len(data)

    def relative(self, path: str) -> Optional[str]:
        rel = os.path.relpath(os.path.realpath(path), self.root)
        return rel if rel in self.files else None

    def tree(self, rel: str) -> Optional[ast.Module]:
        if rel not in self._trees:
            try:
                self._trees[rel] = ast.parse(self.files[rel])
            except (SyntaxError, ValueError, MemoryError, RecursionError):
                self._trees[rel] = None
        return self._trees[rel]

    def close(self) -> None:
        shutil.rmtree(self._tmp.name, ignore_errors=True)


def module_of(rel: str, files: dict[str, str]) -> tuple[str, list[str]]:
    """(dotted module name, sys.path entries relative to the project) for a project file:
    the package is every directory above it that holds an `__init__.py`."""
    parts = rel[:-3].split(os.sep)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    top = len(parts) - 1
    while top > 0 and os.path.join(*parts[:top], "__init__.py") in files:
        top -= 1
    base = os.path.join(*parts[:top]) if top else ""
    return ".".join(parts[top:]), list(dict.fromkeys([base, ""]))


@dataclass(frozen=True)
class ImportPlan:
    module: str
    path: tuple[str, ...]  # sys.path entries, relative to the snapshot
    cls: str
    args: tuple[Any, ...] = ()
    kwargs: tuple[tuple[str, Any], ...] = ()
    attribute: str = ""
    ran: tuple[str, ...] = field(default=())
    file: str = ""  # relative to the snapshot: loaded from there when `module` is no dotted name

    def as_json(self, tree_digest: str) -> dict[str, Any]:
        return {"kind": "module", "module": self.module, "path": list(self.path), "class": self.cls,
                "args": list(self.args), "kwargs": dict(self.kwargs), "attribute": self.attribute, "tree": tree_digest,
                "file": self.file}


class NotImportable(Exception):
    """The finding cannot be observed on the user's object; the message says why."""


def plan_import(finding: Finding, project: ProjectTree) -> ImportPlan:
    """What the worker imports and builds for this finding (raises NotImportable)."""
    rel = project.relative(finding.path)
    if rel is None or finding.cell is not None:
        raise NotImportable("the file is not a Python module of the checked project")
    tree = project.tree(rel)
    cls = next((s for s in tree.body if isinstance(s, ast.ClassDef)
                and s.lineno <= finding.row <= (s.end_lineno or s.lineno)), None) if tree else None
    if cls is None:
        raise NotImportable("the flagged code is not inside a class defined at module level")
    module, path = module_of(rel, project.files)
    args, kwargs, site = _constructor_arguments(cls, rel, project)
    ran = [f"{finding.path}:{cls.lineno}"] + ([site] if site else [])
    return ImportPlan(module, tuple(path), cls.name, args, kwargs, _self_attribute(cls, finding.row), tuple(ran),
                      rel)


def _self_attribute(cls: ast.ClassDef, row: int) -> str:
    """The `self.<name>` that the flagged statement assigns, if it assigns one."""
    for node in ast.walk(cls):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.lineno == row:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                        and target.value.id == "self":
                    return target.attr
    return ""


def _required(cls: ast.ClassDef) -> tuple[list[str], list[str]]:
    """(the parameters of `__init__` after self, those of them without a default)."""
    init = next((s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)
    if init is None:
        return [], []
    args = init.args
    positional = [a.arg for a in [*args.posonlyargs, *args.args][1:]]
    needed = positional[:len(positional) - len(args.defaults)]
    return positional, needed + [a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is None]


def _covers(positional: list[str], required: list[str], args: tuple, kwargs: tuple[tuple[str, Any], ...]) -> bool:
    given = set(positional[:len(args)]) | {k for k, _ in kwargs}
    return len(args) <= len(positional) and all(r in given for r in required)


def _constructor_arguments(cls: ast.ClassDef, rel: str,
                           project: ProjectTree) -> tuple[tuple[Any, ...], tuple[tuple[str, Any], ...], str]:
    """No arguments when `__init__` needs none; else the literal arguments of the first call
    `Name(...)` in the class's own file, then in the rest of the project."""
    positional, required = _required(cls)
    if not required:
        return (), (), ""
    for other in [rel] + sorted(r for r in project.files if r != rel):
        tree = project.tree(other)
        found = literal_call(tree, cls.name) if tree is not None else None
        if found is not None and _covers(positional, required, found[0], found[1]):
            args, kwargs, line = found
            return args, kwargs, f"{other}:{line}"
    raise NotImportable(f"`{cls.name}()` needs `{required[0]}`, and no call of `{cls.name}(...)` in the project "
                        "passes only literal arguments")
