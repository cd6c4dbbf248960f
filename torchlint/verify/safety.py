"""What a program slice may contain before `--verify` runs it: an allow-list, checked in the
parent on the exact tree that is sent to the worker.

- imports of torch, numpy, math and random only (and not their file, network, process or
  compiler parts: torch.load/save/hub/distributed/..., numpy.load/save/fromfile/...);
- no dunder names or attributes (except `super().__init__` and `__name__`), no names of
  ours (`_tl_...`), no eval/exec/compile/open/globals/..., getattr & co only called
  directly (never passed, aliased or stored as values) with a literal, public attribute name;
- no attribute name, anywhere in an attribute chain or an import, that leads from the
  allowed modules to a module or callable outside them (`torch.nn.modules.module.functools`,
  a torch submodule's `.multiprocessing`, the real `builtins` as `enum.bltns`). Those names
  are derived mechanically by scripts/reachable_attributes.py, which walks the attribute
  graph of the installed torch/numpy offline, into reachable.json next to this file
  (linting never imports torch);
- annotations that are plain type expressions only: nothing evaluates a string annotation
  (`typing.get_type_hints`, `functools.singledispatch`) in a slice;
- no stores to attributes of imported modules, no class keywords (`metaclass=`);
- bounded size: node count, nesting depth, folded literal magnitudes and the element count
  of tensors/arrays built from literal sizes (`torch.ones(3 * 10**9)` is refused here,
  cheaply, instead of blowing up the worker).

This is a cheap pre-filter, not the security boundary: the worker's OS sandbox is.

Every walk here is iterative: nothing recurses on the depth of user code."""

from __future__ import annotations

import ast
import json
import math
import os
from typing import Any, Iterator, Optional, Union

ALLOWED_ROOTS = frozenset({"torch", "numpy", "math", "random"})
# Subtrees of the allowed modules that touch files, the network, other processes or a
# compiler, or hand out raw memory.
DENIED_PREFIXES = tuple(f"{p}" for p in (
    "torch.load", "torch.save", "torch.hub", "torch.distributed", "torch.multiprocessing", "torch.ops",
    "torch.classes", "torch.library", "torch.compile", "torch.jit", "torch.package", "torch.onnx",
    "torch.export", "torch.profiler", "torch.autograd.profiler", "torch.utils.tensorboard",
    "torch.utils.cpp_extension", "torch.utils.benchmark", "torch.utils.data.datapipes", "torch.utils.checkpoint",
    "torch.from_file", "torch.serialization", "torch.storage", "torch.UntypedStorage", "torch.TypedStorage",
    "torch.backends", "torch.cuda.memory", "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.parallel.distributed", "torch.nn.SyncBatchNorm.convert_sync_batchnorm", "torch.utils.dlpack", "torch.from_dlpack", "torch.fx",
    "torch._", "torch.testing", "torch.utils.model_zoo", "torch.utils.collect_env", "torch.overrides",
    "numpy.load", "numpy.save", "numpy.savez", "numpy.savez_compressed", "numpy.savetxt", "numpy.loadtxt",
    "numpy.genfromtxt", "numpy.fromfile", "numpy.memmap", "numpy.fromregex", "numpy.lib", "numpy.ctypeslib",
    "numpy.f2py", "numpy.distutils", "numpy.testing", "numpy.DataSource", "numpy.frombuffer", "numpy._",
    "random.SystemRandom",
))
# Methods that write or read files (Tensor.tofile, ndarray.dump, ...), whatever the receiver.
DENIED_METHODS = frozenset({"tofile", "dump", "dumps", "save", "load", "fromfile", "from_file", "open",
                            "share_memory_", "untyped_storage", "storage", "data_ptr", "register_hook",
                            "system", "popen", "spawn", "numpy_frombuffer", "to_dlpack"})
# Attribute names refused on anything but `self`, whatever the qualified name resolves to:
# modules re-export each other (`torch.nn.functional.torch.load`), so a path check alone is
# not enough.
DENIED_ATTRIBUTES = DENIED_METHODS | frozenset({
    "hub", "distributed", "multiprocessing", "ops", "classes", "library", "compile", "jit", "package", "onnx",
    "export", "profiler", "serialization", "cpp_extension", "utils_cpp", "model_zoo", "load_state_dict_from_url",
    "download_url_to_file", "urlopen", "memmap", "open_memmap", "ctypeslib", "f2py", "distutils", "testing",
    "DataSource", "lib", "loadtxt", "savetxt", "genfromtxt", "savez", "savez_compressed", "fromregex",
    "frombuffer", "from_dlpack", "os", "sys", "subprocess", "builtins", "importlib", "ctypes", "shutil",
    "pathlib", "socket", "pickle", "io", "tempfile", "inspect", "gc", "signal", "threading", "urllib", "http",
    "platform", "glob", "mmap", "marshal", "codecs", "linecache", "runpy", "pty", "posix", "nt", "fx",
    "backends", "overrides", "dlpack", "tensorboard", "benchmark", "collect_env", "datapipes", "checkpoint",
    # stdlib modules that torch/numpy modules import and so expose as attributes
    # (`torch.nn.modules.container.operator`), and string- or frame-based ways to reach
    # attributes the names above hide (`"{0.x}".format`, `attrgetter`, `gen.gi_frame`).
    "operator", "types", "weakref", "copyreg", "dis", "code", "codeop", "traceback", "logging", "warnings",
    "atexit", "site", "sysconfig", "zipfile", "tarfile", "gzip", "bz2", "lzma", "sqlite3", "dbm", "shelve",
    "socketserver", "ssl", "select", "selectors", "asyncio", "concurrent", "pkgutil", "zipimport", "string",
    "format", "format_map", "Formatter", "get_field", "attrgetter", "methodcaller", "setattr", "getattr", "delattr",
})
# Attribute families of frames, code objects, generators, coroutines and tracebacks: each
# leads to globals and builtins.
DENIED_ATTRIBUTE_PREFIXES = ("f_", "gi_", "cr_", "ag_", "tb_", "co_")
ALLOWED_BUILTINS = frozenset({
    "abs", "all", "any", "bool", "dict", "divmod", "enumerate", "filter", "float", "frozenset", "int",
    "isinstance", "issubclass", "len", "list", "map", "max", "min", "print", "range", "reversed", "round",
    "set", "slice", "sorted", "str", "sum", "tuple", "zip", "super", "object", "property", "staticmethod",
    "classmethod", "type", "iter", "next", "hasattr", "getattr", "setattr", "callable", "repr", "hash", "id",
    "Exception", "ValueError", "TypeError", "RuntimeError", "KeyError", "IndexError", "StopIteration",
    "AssertionError", "ArithmeticError", "ZeroDivisionError", "NotImplementedError", "AttributeError",
    "True", "False", "None", "NotImplemented", "Ellipsis", "complex", "bytes", "format", "pow", "ord", "chr",
})
_LITERAL_NAME_BUILTINS = frozenset({"getattr", "setattr", "hasattr"})
# Builtins that reach attributes, classes or frames by name: only ever called directly, so
# that `g = getattr`, `map(getattr, ...)`, `sorted(key=type)` never hand them to other code.
CALL_ONLY_BUILTINS = _LITERAL_NAME_BUILTINS | frozenset({"type", "super"})
REACHABLE_DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reachable.json")
_reachable: Optional[tuple[frozenset[str], frozenset[str]]] = None


def _load_reachable() -> tuple[frozenset[str], frozenset[str]]:
    """(all names, the names of module objects) from reachable.json. Read on first use (the
    worker imports this module for ALLOWED_BUILTINS only); a missing or malformed file
    refuses every slice rather than let them all through."""
    global _reachable
    if _reachable is None:
        try:
            with open(REACHABLE_DATA, encoding="utf-8") as fh:
                data = json.load(fh)
            names, modules = data["names"], data["module_names"]
            if type(names) is not dict or not names or type(modules) is not list \
                    or not all(type(n) is str for n in (*names, *modules)):
                raise ValueError("no names")
        except (OSError, ValueError, KeyError, TypeError):
            raise Unsafe("the pre-filter's data file (reachable.json) is missing or damaged") from None
        _reachable = frozenset(names), frozenset(modules)
    return _reachable


def reachable_names() -> frozenset[str]:
    """Attribute names that lead out of the allowed modules."""
    return _load_reachable()[0]


def reachable_module_names() -> frozenset[str]:
    """The subset that names a module object (`functools`, `mp`, `bltns`)."""
    return _load_reachable()[1]


def refused_attribute(name: str) -> bool:
    """An attribute name no slice may read, call, import or look up by string."""
    return name.startswith("_") or name in DENIED_ATTRIBUTES or name.startswith(DENIED_ATTRIBUTE_PREFIXES) \
        or name in reachable_names()
MAX_NODES = 6000
MAX_DEPTH = 60
MAX_INT_BITS = 64
MAX_ELEMENTS = 2**25  # 32 Mi elements: 128 MiB of float32 per literal-sized tensor
MAX_SEQUENCE = 10**6  # "ab" * n, [0] * n
# Factories whose positional int arguments (or first tuple/list argument, or `size=`) are a shape.
_SHAPE_FACTORIES = frozenset({
    *(f"torch.{n}" for n in ("zeros", "ones", "empty", "rand", "randn", "full", "eye", "Tensor", "FloatTensor",
                             "DoubleTensor", "LongTensor", "IntTensor", "ByteTensor", "BoolTensor", "HalfTensor",
                             "ShortTensor", "CharTensor", "BFloat16Tensor", "empty_strided")),
    *(f"numpy.{n}" for n in ("zeros", "ones", "empty", "full", "eye", "identity")),
    *(f"numpy.random.{n}" for n in ("rand", "randn")),
})
_COUNT_FACTORIES = frozenset({"torch.arange", "torch.linspace", "torch.logspace", "torch.randperm", "numpy.arange",
                              "numpy.linspace", "range", "torch.randint", "numpy.random.randint"})


class Unsafe(Exception):
    """The slice may not run; the message says why (shown as the reason for the fallback)."""


Number = Union[int, float, complex]


def iter_with_depth(root: ast.AST) -> Iterator[tuple[ast.AST, int]]:
    stack = [(root, 0)]
    while stack:
        node, depth = stack.pop()
        yield node, depth
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))


def check_shape(root: ast.AST) -> None:
    """Size and depth bounds; run before anything that recurses (unparse, compile)."""
    count = 0
    for _, depth in iter_with_depth(root):
        count += 1
        if depth > MAX_DEPTH:
            raise Unsafe(f"the code nests deeper than {MAX_DEPTH} levels")
        if count > MAX_NODES:
            raise Unsafe(f"the slice has more than {MAX_NODES} syntax nodes")


def fold(node: ast.AST, consts: Optional[dict[str, Number]] = None) -> Optional[Number]:
    """The value of a literal arithmetic expression, or None when it is not one. Raises
    Unsafe when the value would be huge (`9**9**9`): computed bottom-up, iteratively, each
    step bounded before it is performed."""
    order: list[ast.AST] = []
    stack = [node]
    while stack:
        n = stack.pop()
        order.append(n)
        if isinstance(n, ast.BinOp):
            stack.extend((n.left, n.right))
        elif isinstance(n, ast.UnaryOp):
            stack.append(n.operand)
        elif isinstance(n, ast.Name) and consts and n.id in consts:
            pass
        elif not (isinstance(n, ast.Constant) and type(n.value) in (int, float, complex)):
            return None
    values: dict[int, Number] = {}
    for n in reversed(order):
        if isinstance(n, ast.Constant):
            values[id(n)] = n.value  # type: ignore[assignment]  # an int, float or complex (checked above)
        elif isinstance(n, ast.Name):
            values[id(n)] = consts[n.id]  # type: ignore[index]
        elif isinstance(n, ast.UnaryOp):
            v = values[id(n.operand)]
            values[id(n)] = -v if isinstance(n.op, ast.USub) else +v if isinstance(n.op, ast.UAdd) \
                else ~v if isinstance(n.op, ast.Invert) and isinstance(v, int) else _not_literal()
        else:
            assert isinstance(n, ast.BinOp)
            values[id(n)] = _binop(n.op, values[id(n.left)], values[id(n.right)])
        _bound(values[id(n)])
    return values[id(node)]


def _not_literal() -> Number:
    raise Unsafe("unsupported literal operation")


def _bits(v: Number) -> float:
    a = abs(v)
    return math.log2(a) if a > 1 and not (isinstance(a, float) and math.isinf(a)) else 0.0


def _binop(op: ast.operator, a: Any, b: Any) -> Number:  # Any: Python decides what mixes (1 << 2.0 raises)
    if isinstance(op, ast.Pow):
        if isinstance(b, (int, float)) and not isinstance(b, bool) and abs(a) > 1 and b > 0 \
                and _bits(a) * b > MAX_INT_BITS * 4:
            raise Unsafe(f"literal power {a!r} ** {b!r} is too large")
    elif isinstance(op, ast.LShift):
        if isinstance(b, int) and b > MAX_INT_BITS:
            raise Unsafe(f"literal shift by {b} is too large")
    elif isinstance(op, ast.Mult) and _bits(a) + _bits(b) > MAX_INT_BITS * 4:
        raise Unsafe("literal product is too large")
    ops = {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b, ast.Div: lambda: a / b,
           ast.FloorDiv: lambda: a // b, ast.Mod: lambda: a % b, ast.Pow: lambda: a ** b,
           ast.LShift: lambda: a << b, ast.RShift: lambda: a >> b, ast.BitAnd: lambda: a & b,
           ast.BitOr: lambda: a | b, ast.BitXor: lambda: a ^ b}
    fn = ops.get(type(op))
    if fn is None:
        raise Unsafe("unsupported literal operation")
    try:
        return fn()  # type: ignore[no-any-return]
    except (ArithmeticError, TypeError, ValueError) as exc:
        raise Unsafe(f"literal arithmetic fails: {type(exc).__name__}") from None


def _bound(v: Number) -> None:
    if isinstance(v, int) and v.bit_length() > MAX_INT_BITS:
        raise Unsafe(f"a literal integer has {v.bit_length()} bits (more than {MAX_INT_BITS})")


class Validator:
    """Checks a slice module against the allow-list. Call `check(tree)`; raises Unsafe."""

    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}  # local name -> imported module path
        self.consts: dict[str, Number] = {}  # names bound once, to a literal number

    def qualname(self, node: ast.AST) -> Optional[str]:
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name) and node.id in self.aliases:
            return ".".join([self.aliases[node.id], *reversed(parts)])
        return None

    def check(self, tree: ast.Module) -> None:
        check_shape(tree)
        nodes = [n for n, _ in iter_with_depth(tree)]
        for node in nodes:
            if isinstance(node, ast.Import):
                self._import(node)
            elif isinstance(node, ast.ImportFrom):
                self._import_from(node)
        bindings: dict[str, int] = {}
        for node in nodes:
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                bindings[node.id] = bindings.get(node.id, 0) + 1
        self._fold_constants(nodes, bindings)
        super_inits = {id(n.func) for n in nodes if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                       and n.func.attr == "__init__" and isinstance(n.func.value, ast.Call)
                       and isinstance(n.func.value.func, ast.Name) and n.func.value.func.id == "super"}
        self.called = {id(n.func) for n in nodes if isinstance(n, ast.Call)}
        self.assigned = {name for name, count in bindings.items() if count}
        for node in nodes:
            self._node(node, super_inits)
            self._annotations_of(node)

    def _import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._module(alias.name)
            self._import_names(alias.name.split(".")[1:])
            if alias.asname:
                self.aliases[alias.asname] = alias.name
            else:
                root = alias.name.split(".")[0]
                self.aliases[root] = root

    def _import_from(self, node: ast.ImportFrom) -> None:
        if node.level or not node.module:
            raise Unsafe("relative imports are not allowed in a slice")
        for alias in node.names:
            if alias.name == "*":
                raise Unsafe("`import *` is not allowed in a slice")
            full = f"{node.module}.{alias.name}"
            self._module(full)
            self._import_names(full.split(".")[1:])
            self.aliases[alias.asname or alias.name] = full

    def _fold_constants(self, nodes: list[ast.AST], bindings: dict[str, int]) -> None:
        """Names bound once, to a value that folds to a constant (sizes the checks below read)."""
        for node in nodes:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                    and bindings.get(node.targets[0].id) == 1:
                value = fold(node.value)
                if value is not None:
                    self.consts[node.targets[0].id] = value

    def _annotations_of(self, node: ast.AST) -> None:
        if isinstance(node, (ast.FunctionDef, ast.Lambda)):
            args = node.args
            for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
                if arg is not None and arg.annotation is not None:
                    self._annotation(arg.annotation)
            if isinstance(node, ast.FunctionDef) and node.returns is not None:
                self._annotation(node.returns)
        elif isinstance(node, ast.AnnAssign):
            self._annotation(node.annotation)
        elif isinstance(node, ast.ClassDef) and node.keywords:
            raise Unsafe("class keywords (`metaclass=`) are not allowed in a slice")

    def _import_names(self, parts: list[str]) -> None:
        for part in parts:
            if refused_attribute(part):
                raise Unsafe(f"imports `{part}`, which leads out of the allowed modules")

    def _annotation(self, root: ast.expr) -> None:
        """A plain type: names of imports, classes or builtins, their attributes and
        subscripts, `X | Y`, None. Never a string, nor a name bound to a value (a string
        there is evaluated later by whatever reads the annotation)."""
        stack: list[ast.AST] = [root]
        while stack:
            node = stack.pop()
            if isinstance(node, ast.Name):
                if node.id in self.assigned and node.id not in self.aliases:
                    raise Unsafe(f"the annotation `{node.id}` names a value bound in the slice")
            elif isinstance(node, (ast.Attribute, ast.Subscript, ast.Tuple, ast.List, ast.Load)) or (
                    isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr)) or isinstance(node, ast.BitOr) \
                    or isinstance(node, ast.Constant) and (node.value is None or node.value is Ellipsis):
                stack.extend(ast.iter_child_nodes(node))
            else:
                raise Unsafe("an annotation that is not a plain type expression (a string, a call ...)")

    def _module(self, name: str) -> None:
        if name.split(".")[0] not in ALLOWED_ROOTS:
            raise Unsafe(f"imports `{name}` (only torch, numpy, math and random may be imported)")
        if name.startswith(DENIED_PREFIXES):
            raise Unsafe(f"uses `{name}`, which may touch files, processes or the network")

    def _node(self, node: ast.AST, super_inits: set[int]) -> None:
        if isinstance(node, (ast.Global, ast.Nonlocal, ast.AsyncFunctionDef, ast.AsyncFor, ast.AsyncWith,
                             ast.Await)):
            raise Unsafe(f"`{type(node).__name__}` is not allowed in a slice")
        if isinstance(node, ast.Name):
            self._name(node.id, store=not isinstance(node.ctx, ast.Load))
            if node.id in CALL_ONLY_BUILTINS and id(node) not in self.called:
                raise Unsafe(f"uses `{node.id}` as a value (it may only be called directly)")
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            self._name(node.name, definition=True)
        elif isinstance(node, ast.arg):
            self._name(node.arg, definition=True)
        elif isinstance(node, ast.Attribute):
            self._attribute(node, super_inits)
        elif isinstance(node, ast.Call):
            self._call(node)
        elif isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
            self._string(node.value)
        elif isinstance(node, ast.BinOp):
            if fold(node) is None and isinstance(node.op, ast.Mult):
                self._repetition(node)

    def _attribute(self, node: ast.Attribute, super_inits: set[int]) -> None:
        if node.attr.startswith("__") and id(node) not in super_inits:
            raise Unsafe(f"accesses the dunder attribute `{node.attr}`")
        # `self.x` is mostly the user's own state (`self.cache`), but a method can be
        # called with a module as `self`: names of modules and the fixed list still apply.
        on_self = isinstance(node.value, ast.Name) and node.value.id == "self"
        if node.attr.startswith("_tl_") or (
                not node.attr.startswith("_") and (node.attr in DENIED_ATTRIBUTES
                                                   or node.attr in reachable_module_names())
                if on_self else refused_attribute(node.attr) and id(node) not in super_inits):
            raise Unsafe(f"calls or reads `.{node.attr}`")
        name = self.qualname(node)
        if name is not None:
            self._module(name)
            if not isinstance(node.ctx, ast.Load):
                raise Unsafe(f"assigns to `{name}`, an attribute of an imported module")

    @staticmethod
    def _string(value: "str | bytes") -> None:
        if len(value) > MAX_SEQUENCE:
            raise Unsafe("a string literal is too long")
        text = value if isinstance(value, str) else value.decode("latin-1")
        if "__" in text and text != "__main__":
            raise Unsafe("a string literal names a dunder")

    def _name(self, name: str, definition: bool = False, store: bool = False) -> None:
        if store and name == "self":
            raise Unsafe("rebinds `self`")
        if name.startswith("_tl_"):
            raise Unsafe(f"the name `{name}` is reserved by torchlint")
        if name.startswith("__") and name.endswith("__") and not (name == "__name__" or definition and name in (
                "__init__", "__len__", "__getitem__", "__iter__", "__call__", "__repr__", "__next__")):
            raise Unsafe(f"uses the dunder name `{name}`")
        if name in ("eval", "exec", "compile", "open", "globals", "locals", "vars", "dir", "breakpoint",
                    "input", "help", "memoryview", "exit", "quit", "delattr", "bytearray"):
            raise Unsafe(f"uses `{name}`")

    def _call(self, call: ast.Call) -> None:
        func = call.func
        if isinstance(func, ast.Name) and func.id in CALL_ONLY_BUILTINS and (
                call.keywords or any(isinstance(a, ast.Starred) for a in call.args)):
            raise Unsafe(f"`{func.id}` with `*` or keyword arguments")
        if isinstance(func, ast.Name) and func.id == "type" and len(call.args) != 1:
            raise Unsafe("`type` may only ask for the type of one value (no class creation)")
        if isinstance(func, ast.Name) and func.id in _LITERAL_NAME_BUILTINS:
            attr = call.args[1] if len(call.args) > 1 else None
            if not (isinstance(attr, ast.Constant) and isinstance(attr.value, str)
                    and attr.value.isidentifier() and not refused_attribute(attr.value)):
                raise Unsafe(f"`{func.id}` with a non-literal, private or refused attribute name")
            if func.id == "setattr" and self.qualname(call.args[0]) is not None:
                raise Unsafe("`setattr` on an imported module")
        name = self.qualname(func) or (func.id if isinstance(func, ast.Name) and func.id == "range" else None)
        if name in _SHAPE_FACTORIES:
            self._elements(name, _shape_args(call))
        elif name in ("torch.randint", "numpy.random.randint"):
            size = next((k.value for k in call.keywords if k.arg == "size"), None)
            size = size if size is not None else next(
                (a for a in call.args if isinstance(a, (ast.Tuple, ast.List))), None)
            if size is not None:
                self._elements(name, list(size.elts) if isinstance(size, (ast.Tuple, ast.List)) else [size])
        elif name in _COUNT_FACTORIES:
            values = [fold(a, self.consts) for a in call.args[:3] if not isinstance(a, ast.Starred)]
            steps = next((fold(k.value, self.consts) for k in call.keywords if k.arg == "steps"), None)
            count = _count(name, values, steps)
            if count is not None and count > MAX_ELEMENTS:
                raise Unsafe(f"`{name}` with literal bounds makes {count:.3g} elements "
                             f"(more than {MAX_ELEMENTS})")

    def _elements(self, name: str, dims: list[ast.AST]) -> None:
        total = 1
        for dim in dims:
            value = fold(dim, self.consts)
            if isinstance(value, int) and not isinstance(value, bool):
                total *= max(value, 0)
                if total > MAX_ELEMENTS:
                    raise Unsafe(f"`{name}` with a literal size of at least {total:.3g} elements "
                                 f"(more than {MAX_ELEMENTS})")

    def _repetition(self, node: ast.BinOp) -> None:
        for seq, count in ((node.left, node.right), (node.right, node.left)):
            n = fold(count, self.consts)
            if isinstance(n, int) and isinstance(seq, (ast.List, ast.Tuple, ast.Constant)) and n > MAX_SEQUENCE:
                raise Unsafe(f"repeats a literal sequence {n} times")


def _shape_args(call: ast.Call) -> list[ast.AST]:
    size = next((k.value for k in call.keywords if k.arg == "size"), None)
    if size is not None:
        return list(size.elts) if isinstance(size, (ast.Tuple, ast.List)) else [size]
    args: list[ast.AST] = [a for a in call.args if not isinstance(a, ast.Starred)]
    if args and isinstance(args[0], (ast.Tuple, ast.List)):
        elts = args[0].elts
        # torch.Tensor([1.0, 2.0]) holds values, not a shape: only int literals count.
        return list(elts) if all(isinstance(fold(e), int) for e in elts) and len(elts) <= 8 else []
    if call.func and isinstance(call.func, ast.Attribute) and call.func.attr in ("full",):
        args = args[:1]
    return args


def _count(name: str, values: list[Optional[Number]], steps: Optional[Number]) -> Optional[float]:
    nums = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if name in ("torch.linspace", "torch.logspace", "numpy.linspace"):
        n = steps if steps is not None else (values[2] if len(values) > 2 else None)
        return float(n) if isinstance(n, (int, float)) else None
    if name == "torch.randperm":
        return float(nums[0]) if nums and len(values) >= 1 and values[0] is not None else None
    if name in ("torch.randint", "numpy.random.randint"):
        return None  # the bounds are values, the size is a separate argument checked by the caller
    if len(values) != len(nums) or not nums:
        return None  # a bound is not literal: the memory watchdog covers it
    if len(nums) == 1:
        return abs(float(nums[0]))
    step = nums[2] if len(nums) > 2 else 1
    return abs((float(nums[1]) - float(nums[0])) / float(step)) if step else None
