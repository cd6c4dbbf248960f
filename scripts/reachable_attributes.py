"""Derive the attribute names that `--verify`'s pre-filter (torchlint/verify/safety.py)
refuses because they lead out of the allowed modules, by walking what a slice can reach.

A slice may import torch, numpy, math and random; from there every public attribute chain
is reachable (`torch.nn.modules.module.functools.partial`). This script imports those
modules, walks their attribute graph breadth-first to a bounded depth (modules, classes,
module-level objects, the items of module-level containers) along the edges the pre-filter
already allows, and records each attribute name whose value is *foreign*: a module, class,
function or object from outside the allowed modules (os, sys, subprocess, typing,
functools, inspect, pickle, the real `builtins`, multiprocessing, torch's refused parts such
as torch.multiprocessing ...) or a reflective builtin. Foreign modules that are harmless and
share names with everyday methods (`copy`, `collections`, ...) are walked through instead, so
what *they* lead to is recorded.

Linting never imports torch: the result is written to torchlint/verify/reachable.json,
which safety.py reads. Rerun after a torch or numpy upgrade:

    python scripts/reachable_attributes.py            # rewrite the data file
    python scripts/reachable_attributes.py --check    # exit 1 if the file is not current
"""

from __future__ import annotations

import argparse
import builtins
import importlib
import json
import sys
import types
import warnings
from collections import deque
from pathlib import Path
from typing import Any, Iterator, Optional

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "torchlint" / "verify"))
import safety  # noqa: E402  (torchlint/verify/safety.py, without importing torchlint)

DATA = ROOT / "torchlint" / "verify" / "reachable.json"
MAX_DEPTH = 9
SAMPLE_DEPTH = 3
MAX_ITEMS = 200  # items of one module-level container looked at
# Foreign modules walked through rather than refused: no file, process, import, frame or
# string-evaluation powers of their own, and names (`copy`, `abc`) that everyday code uses
# as methods. What they lead to is still walked and recorded.
HARMLESS_MODULES = frozenset({"copy", "collections", "collections.abc", "_collections_abc", "numbers", "enum",
                              "abc", "itertools", "math", "cmath", "random", "textwrap", "contextlib",
                              "fractions", "decimal", "_decimal", "heapq", "bisect", "statistics", "keyword",
                              "reprlib", "re", "_collections", "_random", "_bisect", "_heapq", "_abc",
                              "_functools", "_warnings", "warnings"})
HARMLESS_PREFIXES = ("_cython_", "pybind11_builtins")  # numpy.random's compiled methods, torch's C++ bindings
# Parts of torch and numpy refused although they are private modules (which otherwise host
# public API: `torch.add` lives in torch._C): compilers, code generation, raw ops, logging.
_DANGEROUS_PRIVATE = ("torch._dynamo", "torch._inductor", "torch._export", "torch._jit_internal", "torch._library",
                      "torch._ops", "torch._logging", "torch._utils_internal", "torch._classes", "torch._package",
                      "torch._guards", "torch._strobelight", "torch._higher_order_ops", "torch._lazy",
                      "torch._C._distributed", "torch._C._dynamo", "numpy._pytesttester", "numpy._core._internal",
                      "numpy._utils")
_PUBLIC_DENIED = tuple(p for p in safety.DENIED_PREFIXES if not p.endswith("._"))
# Builtins that read or write attributes, namespaces or code by string.
STRING_REFLECTION = frozenset({"getattr", "setattr", "hasattr", "delattr", "vars", "dir", "eval", "exec", "compile",
                               "globals", "locals", "__import__", "open", "breakpoint", "input", "help"})
_CALLABLE_KINDS = (type, types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.MethodDescriptorType,
                   types.WrapperDescriptorType, types.ClassMethodDescriptorType, types.MethodWrapperType,
                   types.GetSetDescriptorType, types.MemberDescriptorType)
_DATA_KINDS = (int, float, complex, bool, str, bytes, type(None), type(Ellipsis), type(NotImplemented), range, slice)
_CONTAINERS = (list, tuple, set, frozenset, dict)


def foreign_module(name: str) -> bool:
    root = name.split(".")[0]
    if root in ("torch", "numpy", "functorch"):
        if name.startswith("numpy.lib._"):  # numpy 2's implementation modules behind `numpy.*`
            return False
        return name.startswith(_PUBLIC_DENIED) or name.startswith(_DANGEROUS_PRIVATE)
    return name not in HARMLESS_MODULES and not name.startswith(HARMLESS_PREFIXES)


def home(obj: Any) -> Optional[str]:
    """The module an object comes from."""
    if isinstance(obj, types.ModuleType):
        return obj.__name__
    if isinstance(obj, _CALLABLE_KINDS):
        module = getattr(obj, "__module__", None)
        if isinstance(module, str):
            return module
        owner = getattr(obj, "__objclass__", None)
        if isinstance(owner, type):
            return owner.__module__
        bound = getattr(obj, "__self__", None)
        if isinstance(bound, types.ModuleType):
            return bound.__name__
        if bound is not None:
            return type(bound).__module__
    module = type(obj).__module__
    return module if isinstance(module, str) else None


def dangerous(obj: Any) -> Optional[str]:
    """Why a value must not be reachable, or None."""
    if isinstance(obj, types.ModuleType):
        return f"module {obj.__name__}" if foreign_module(obj.__name__) else None
    if isinstance(obj, _DATA_KINDS):
        return None
    where = home(obj)
    if where == "builtins":
        name = getattr(obj, "__name__", None)
        if callable(obj) and (name not in safety.ALLOWED_BUILTINS or name in STRING_REFLECTION) \
                and getattr(builtins, str(name), None) is obj:
            return f"builtin {name}"
        return None
    if where is None or foreign_module(where):
        return f"{type(obj).__name__} from {where}"
    return None


def public_names(obj: Any) -> list[str]:
    try:
        names = dir(obj)
    except Exception:
        return []
    return sorted(n for n in names if isinstance(n, str) and not n.startswith("_"))


def allowed_edge(name: str) -> bool:
    """An attribute name the pre-filter lets through without this data."""
    return name not in safety.DENIED_ATTRIBUTES and not name.startswith(safety.DENIED_ATTRIBUTE_PREFIXES)


def items(obj: Any) -> Iterator[Any]:
    try:
        values = list(obj.items()) if isinstance(obj, dict) else list(obj)
    except Exception:
        return
    for value in values[:MAX_ITEMS]:
        yield from (value if isinstance(value, tuple) and isinstance(obj, dict) else (value,))


def samples() -> list[Any]:
    """Values ordinary slices make and work with: tensors, modules, arrays, optimizers, a
    loader, builtin types. What they hold is reachable too, and their own attribute names
    must stay usable."""
    import numpy
    import torch

    model = torch.nn.Sequential(torch.nn.Linear(2, 2))
    loss = (torch.ones(2, requires_grad=True) * 2).sum()
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.ones(2)))
    samples = [torch.ones(2), loss.grad_fn, model, model[0], torch.nn.MSELoss(), torch.optim.SGD(model.parameters(), 0.1),
               loader, torch.Generator(), torch.float32, torch.device("cpu"), torch.Size([1]),
               numpy.ones(2), numpy.float32(1), numpy.dtype("f4"), numpy.random.default_rng(0), numpy.add,
               "", b"", [], {}, set(), frozenset(), (), 1, 1.0, 1j, True, range(1), slice(1), Exception(), iter([]),
               {}.items(), {}.keys(), {}.values(), property(), staticmethod(len), classmethod(lambda cls: cls)]
    return samples


def everyday_names(values: list[Any]) -> set[str]:
    """The attribute names of `values` that lead somewhere harmless: refusing one of them
    would refuse ordinary code."""
    names = set()
    for obj in values:
        for name in public_names(obj):
            try:
                value = getattr(obj, name)
            except BaseException:
                continue
            if dangerous(value) is None:  # `Module.T_destination` is a typing.TypeVar
                names.add(name)
    return names


class Graph:
    """What the walk saw: every edge into each object, and the edges to refused values."""

    def __init__(self) -> None:
        self.incoming: dict[int, list[tuple[int, str, str]]] = {}  # id -> (parent id, name, path)
        self.refused: list[tuple[int, str, str, str]] = []  # (parent id, name, path, why)
        self.containers: set[int] = set()  # reached by subscript: no name of their own to refuse
        self.roots: set[int] = set()


def walk(values: list[Any], max_depth: int = MAX_DEPTH) -> Graph:
    """Breadth-first from the allowed modules and the sample `values`."""
    graph = Graph()
    queue: deque[tuple[Any, str, int]] = deque()
    keep_alive = list(values)  # ids stay unique only while the objects live
    roots = [(importlib.import_module(name), name, 0) for name in sorted(safety.ALLOWED_ROOTS)]
    # A sample's attributes make new objects on every access (`tensor.T`): a shallow walk.
    roots += [(value, f"<{type(value).__module__}.{type(value).__qualname__}>", max_depth - SAMPLE_DEPTH)
              for value in values]
    for root, path, depth in roots:
        if id(root) not in graph.incoming:
            graph.incoming[id(root)] = []
            graph.roots.add(id(root))
            queue.append((root, path, depth))
    while queue:
        obj, path, depth = queue.popleft()
        edges: list[tuple[str, str, Any]] = []
        if isinstance(obj, _CONTAINERS):  # items are reached by subscript
            graph.containers.add(id(obj))
            edges = [("[...]", f"{path}[...]", v) for v in items(obj)]
        else:
            for name in public_names(obj):
                if not allowed_edge(name):
                    continue
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        value = getattr(obj, name)
                except BaseException:  # a lazy import that fails, a property that raises
                    continue
                edges.append((name, f"{path}.{name}", value))
        for name, where, value in edges:
            parent = id(obj)
            why = dangerous(value)
            if why is not None:
                graph.refused.append((parent, name, where, why))
                continue
            if isinstance(value, _DATA_KINDS):
                continue
            if id(value) in graph.incoming:
                graph.incoming[id(value)].append((parent, name, where))
                continue
            graph.incoming[id(value)] = [(parent, name, where)]
            keep_alive.append(value)
            if depth + 1 < max_depth:
                queue.append((value, where, depth + 1))
    return graph


def corpus_names() -> set[str]:
    """Attribute names that the project's own examples of user code use (`.utils`, `.log`)."""
    import ast

    names: set[str] = set()
    for folder in ("tests/fixtures", "examples"):  # the rules' verify cases are in tests/fixtures/*/verify
        for path in sorted((ROOT / folder).rglob("*.py")):
            try:
                tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
            except (SyntaxError, ValueError):
                continue
            names.update(n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute))
    return names


def closure(graph: Graph, everyday: set[str], used: set[str]) -> dict[str, str]:
    """The names to refuse, each with a path that shows why. Every edge to a refused value is
    cut: by refusing its name, or, when the name is dearer to ordinary code (`.log`, `.size`)
    than the names that lead to the object holding it, by refusing that object instead,
    through every edge that leads to it (`torch.autograd.graph.log` is a logging.Logger:
    refuse `.graph`, not `.log`). A subscript has no name: its container is refused."""
    def cost(name: str) -> int:
        return 3 if name in used else 2 if name in everyday else 0

    found: dict[str, str] = {}
    lifted: set[int] = set()
    work = list(graph.refused)
    while work:
        parent, name, path, why = work.pop()
        incoming = graph.incoming.get(parent, [])
        subscript = parent in graph.containers
        lift = incoming and (subscript or max(cost(e[1]) for e in incoming) < cost(name))
        if not lift:
            found.setdefault(name, f"{path}: {why}")
        elif parent not in lifted:
            lifted.add(parent)
            for grand, parent_name, parent_path in incoming:
                work.append((grand, parent_name, parent_path, f"leads to `{'' if subscript else '.'}{name}` ({why})"))
    return found


def versions() -> dict[str, str]:
    import numpy
    import torch

    return {"torch": torch.__version__.split("+")[0], "numpy": numpy.__version__,
            "python": f"{sys.version_info.major}.{sys.version_info.minor}"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the data file lacks a name found now")
    parser.add_argument("--depth", type=int, default=MAX_DEPTH)
    args = parser.parse_args()
    values = samples()
    found = closure(walk(values, args.depth), everyday_names(values), corpus_names())
    old = json.loads(DATA.read_text(encoding="utf-8")) if DATA.is_file() else {"names": {}}
    missing = sorted(set(found) - set(old["names"]))
    if args.check:
        for name in missing:
            print(f"missing: {name}  ({found[name]})")
        return 1 if missing else 0
    modules = sorted(name for name, why in found.items() if why.split(": ", 1)[-1].startswith("module "))
    data = {"comment": "Generated by scripts/reachable_attributes.py; do not edit by hand.",
            "depth": args.depth, "generated_with": versions(), "names": dict(sorted(found.items())),
            "module_names": modules}
    DATA.write_text(json.dumps(data, indent=1, ensure_ascii=True) + "\n", encoding="utf-8")
    print(f"{len(found)} names ({len(missing)} new) -> {DATA.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
