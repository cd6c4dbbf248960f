"""TL603: a checkpoint that pickles non-tensor objects, which a default `torch.load` refuses."""

from __future__ import annotations

import ast

from torchlint.analysis import inference
from torchlint.analysis.torch_api import TORCH_SAVE
from torchlint.checker import FileContext
from torchlint.rules.base import Evidence, Rule, Violation, arg_or_keyword, calls_ending, dotted, has_star_kwargs, keyword, literal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional


def probe_checkpoint_objects(params: dict, device: str) -> tuple[str, str]:
    """Save a checkpoint holding what the finding names and load it with the default
    `weights_only`: the weights-only unpickler refuses objects, not dicts of primitives."""
    import argparse
    import io
    import types

    import torch

    held = params.get("held", "argparse.Namespace")
    layer = torch.nn.Linear(2, 2)
    values = {
        "argparse.Namespace": argparse.Namespace(lr=0.1, name="run"),
        "object": types.SimpleNamespace(lr=0.1),  # an instance of a class: a config object
        "nn.Module": layer,
        "optimizer": torch.optim.SGD(layer.parameters(), lr=0.1),
        "vars(args)": vars(argparse.Namespace(lr=0.1, name="run")),  # a dict of primitives
        "state_dict": layer.state_dict(),
    }
    if held == "numpy":
        try:
            import numpy
        except ImportError:
            return "skipped", "NumPy is not installed here"
        values[held] = numpy.float64(0.5)
    if held not in values:
        return "skipped", f"the probe has no sample of {held!r}"
    buffer = io.BytesIO()
    torch.save({"value": values[held], "epoch": 3}, buffer)
    buffer.seek(0)
    try:
        torch.load(buffer)
    except Exception as exc:  # pickle.UnpicklingError on torch >= 2.6
        return "confirmed", (f"torch {torch.__version__}: torch.load of a checkpoint holding {held} raised "
                             f"{type(exc).__qualname__}: {str(exc).splitlines()[0][:120]}")
    return "not-reproduced", f"torch {torch.__version__}: the default torch.load accepted a checkpoint holding {held}"


_PARSE_ARGS = ("parse_args",)
# Names that hold parsed arguments when the file also binds them from `parse_args()`.
_ARG_NAMES = frozenset({"args", "opt", "opts", "hparams", "flags", "cfg", "config", "options"})
_OBJECT_CALLS = {"argparse.Namespace": "an `argparse.Namespace`", "types.SimpleNamespace": "a `SimpleNamespace`"}
# numpy functions that return Python values, not numpy objects.
_NUMPY_PLAIN = frozenset({"numpy.isscalar", "numpy.array_equal", "numpy.array_equiv", "numpy.allclose",
                          "numpy.ndim", "numpy.size", "numpy.shape"})
_ALLOW_LISTS = ("add_safe_globals", "safe_globals")


def _is_parse_args(value: Optional[ast.AST]) -> bool:
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in _PARSE_ARGS


class _FileFacts:
    """What the whole file says: names bound from `parse_args()`, its `torch.load` calls,
    whether it allow-lists classes for the weights-only unpickler."""

    def __init__(self, ctx: FileContext) -> None:
        self.parsed_names: set[str] = set()
        self.default_loads: list[tuple[int, str]] = []  # (line, the path argument as written)
        self.other_loads = False  # weights_only=False, **kwargs, pickle_module=, a variable
        self.allow_lists = False
        for node in ast.walk(ctx.tree):
            if isinstance(node, ast.Assign) and _is_parse_args(node.value):
                self.parsed_names.update(t.id for t in node.targets if isinstance(t, ast.Name))
            elif (isinstance(node, ast.Attribute) and node.attr in _ALLOW_LISTS) \
                    or (isinstance(node, ast.Name) and node.id in _ALLOW_LISTS):
                self.allow_lists = True
            elif isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)) \
                    and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id) == "load":
                self._load(node, ctx)

    def _load(self, node: ast.Call, ctx: FileContext) -> None:
        if ctx.module_scope.imports.call_name(node) != "torch.load":
            return
        weights_only = keyword(node, "weights_only")
        if has_star_kwargs(node) or keyword(node, "pickle_module") is not None or len(node.args) > 2 \
                or (weights_only is not None and literal(weights_only.value) is not True):
            self.other_loads = True
        else:
            path = arg_or_keyword(node, 0, "f")
            self.default_loads.append((node.lineno, ast.dump(path) if path is not None else ""))

    def load_of(self, save: ast.Call) -> Optional[int]:
        """The line of the default load that reads what `save` writes: the one whose path is
        written the same way, else the file's first."""
        path = arg_or_keyword(save, 1, "f")
        written = ast.dump(path) if path is not None else None
        same = [line for line, read in self.default_loads if read == written]
        return same[0] if same else (self.default_loads[0][0] if self.default_loads else None)


class CheckpointHoldsObject(Violation):
    what: str  # what kind of object, `an argparse.Namespace`
    value: str  # the object as written, shown when short
    default_load: Optional[int] = None  # the line of this file's default `torch.load`, if any
    help = ("`weights_only=True` is the default since torch 2.6: save only tensors, state_dicts and "
            "primitives (`vars(args)`, `x.state_dict()`, `float(v)`)")

    def message(self) -> str:
        where = f"a default `torch.load` (line {self.default_load})" if self.default_load is not None \
            else "a default `torch.load`"
        shown = f" `{self.value}`" if len(self.value) <= 24 else ""
        return f"Checkpoint holds {self.what}{shown}: {where} raises `UnpicklingError`"


class CheckpointPicklesObjects(Rule):
    """## What it does
    Flags `torch.save(...)` of a checkpoint that holds a non-tensor object: an
    `argparse.Namespace` (a name bound from `parser.parse_args()` in the file, or
    `argparse.Namespace(...)`), a `SimpleNamespace`, an instance of a plain class of the same file
    (a config or dataclass), a whole `nn.Module`, an optimizer or scheduler object (not its
    `state_dict()`), or a NumPy value (`np.mean(...)`, an array). The checkpoint is a dict literal
    in the call, `dict(...)`, or a name bound to one (with `ckpt["k"] = v` additions in the same
    function), or the object itself.

    It stays silent when the file loads checkpoints in a way that accepts objects: a `torch.load`
    with `weights_only=False` (or a non-literal value, `pickle_module=`, `**kwargs`), or an
    allow-list (`torch.serialization.add_safe_globals` / `safe_globals`). When the file has a
    default `torch.load`, the message names its line (the load whose path is written as the
    save's, `ckpt_dir / "checkpoint.pth"`, else the first); when it has none, the finding is about
    any later default load of the file (another script, a user). `vars(args)` (a dict of
    primitives), `state_dict()`s, tensors, numbers, strings, lists, tuples and dicts of them are
    not flagged. A whole module saved directly (`torch.save(model, path)`) is {rule:save-whole-module}'s.

    ## Why is this bad?
    Since torch 2.6 `torch.load` defaults to `weights_only=True`, whose unpickler accepts
    tensors, primitive containers and a few torch types, and refuses everything else. Checked on
    torch 2.13: a checkpoint holding an `argparse.Namespace`, a dataclass instance, a
    `SimpleNamespace`, an `nn.Module`, an optimizer object, a NumPy scalar or array, or
    `vars(args)` with a `pathlib.Path` value raises `UnpicklingError: Weights only load failed`;
    `vars(args)` of primitives, `state_dict()`s of modules, optimizers and schedulers,
    `torch.Size`, dtypes, devices and the torch and Python RNG states load. The training run
    writes the checkpoint without complaint and the failure appears only when it is resumed or
    evaluated.

    ## Example
    ```python
    args = parser.parse_args()
    torch.save({"model": model.state_dict(), "args": args, "epoch": epoch}, path)
    ckpt = torch.load(path)  # UnpicklingError
    ```

    ## Use instead
    ```python
    args = parser.parse_args()
    torch.save({"model": model.state_dict(), "args": vars(args), "epoch": epoch}, path)
    ckpt = torch.load(path)
    ```

    ## Fix safety
    No automatic fix: code that reads the checkpoint (`ckpt["args"].lr`) changes with it.

    ## References
    - [torch.load: weights_only](https://pytorch.org/docs/stable/notes/serialization.html#weights-only)
    - [torch.serialization.add_safe_globals](https://pytorch.org/docs/stable/notes/serialization.html#torch.serialization.add_safe_globals)
    """

    code = "TL603"
    name = "checkpoint-pickles-objects"
    summary = "Checkpoint holds non-tensor objects (args, a config, a module): the default torch.load refuses it"
    severity = "warning"
    tags = ("correctness", "serialization")
    requires_text = ("save",)
    evidence = Evidence(probe=probe_checkpoint_objects,
                        crash=r"UnpicklingError|Weights only load failed|WeightsUnpickler")

    def setup(self, ctx: FileContext) -> None:
        self._facts: Optional[_FileFacts] = None
        self._added: dict[int, dict[str, list[tuple[int, ast.AST]]]] = {}  # scope -> name -> ckpt[k] = v

    @calls_ending(TORCH_SAVE.lasts)
    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        if ctx.call_among(node, TORCH_SAVE) is None or keyword(node, "pickle_module") is not None:
            return
        obj = arg_or_keyword(node, 0, "obj")
        if obj is None:
            return
        found = self._held(obj, node.lineno, ctx, top=True)
        if found is None:
            return
        facts = self._file_facts(ctx)
        if facts.other_loads or facts.allow_lists:
            return
        value, what, held = found
        inside = node.lineno <= value.lineno <= (node.end_lineno or node.lineno)  # type: ignore[attr-defined]
        violation = CheckpointHoldsObject(what=what, value=dotted(value),
                                          default_load=facts.load_of(node))
        self.report(value if inside else obj, violation,
                    params={"held": held})

    def _held(self, obj: ast.AST, lineno: int, ctx: FileContext, top: bool = False
              ) -> Optional[tuple[ast.AST, str, str]]:
        """The first non-tensor object the checkpoint holds: (node, description, probe sample)."""
        values = self._values(obj, lineno, ctx)
        if values is None:
            if top:
                kind = self._kind(obj, lineno, ctx)
                if kind is not None and kind[1] != "nn.Module":  # a whole module alone is TL602's
                    return obj, kind[0], kind[1]
            return None
        for value in values:
            kind = self._kind(value, lineno, ctx)
            if kind is not None:
                return value, kind[0], kind[1]
        return None

    def _values(self, obj: ast.AST, lineno: int, ctx: FileContext) -> Optional[list[ast.AST]]:
        """The values of a dict checkpoint, or None when `obj` is not one."""
        if isinstance(obj, ast.Dict):
            return [v for k, v in zip(obj.keys, obj.values) if k is not None]
        if isinstance(obj, ast.Call) and isinstance(obj.func, ast.Name) and obj.func.id == "dict" \
                and not obj.args and ctx.resolve_import("dict") is None:
            return [k.value for k in obj.keywords if k.arg is not None]
        if isinstance(obj, ast.Name):
            bound = ctx.value_before(obj, lineno)
            base = self._values(bound, lineno, ctx) if isinstance(bound, (ast.Dict, ast.Call)) else None
            if base is not None:
                return base + [v for line, v in self._additions(ctx).get(obj.id, []) if line < lineno]
        return None

    def _additions(self, ctx: FileContext) -> dict[str, list[tuple[int, ast.AST]]]:
        """`ckpt["key"] = value` statements of the current scope, by checkpoint name."""
        scope = ctx.scope
        found = self._added.get(id(scope))
        if found is None:
            found = self._added[id(scope)] = {}
            for stmt in _scope_nodes(scope):
                if isinstance(stmt, ast.Assign):
                    for target in stmt.targets:
                        if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                            found.setdefault(target.value.id, []).append((stmt.lineno, stmt.value))
        return found

    def _kind(self, value: ast.AST, lineno: int, ctx: FileContext) -> Optional[tuple[str, str]]:
        """(what the value is, the probe's sample) for a value the weights-only unpickler refuses."""
        if isinstance(value, ast.Name):
            if inference.kind_of(value, ctx) == inference.MODULE:
                return "a whole `nn.Module`", "nn.Module"
            binding = ctx.binding_before(value.id, lineno, module_fallback=True)
            if binding is None:
                return None
            if isinstance(binding.node, ast.arg):
                if value.id in _ARG_NAMES and value.id in self._file_facts(ctx).parsed_names:
                    return "an `argparse.Namespace`", "argparse.Namespace"
                return None
            if binding.index is not None or not isinstance(binding.node, (ast.Assign, ast.AnnAssign)):
                return None
            if _is_parse_args(binding.value):
                return "an `argparse.Namespace`", "argparse.Namespace"
            return self._call_kind(binding.value, ctx) if isinstance(binding.value, ast.Call) else None
        if isinstance(value, ast.Call):
            return self._call_kind(value, ctx)
        return None

    def _call_kind(self, call: ast.Call, ctx: FileContext) -> Optional[tuple[str, str]]:
        name = ctx.call_name(call)
        if name in _OBJECT_CALLS:
            return _OBJECT_CALLS[name], "argparse.Namespace" if name.startswith("argparse") else "object"
        if name is not None:
            if name.startswith("torch.optim.lr_scheduler."):
                return "a scheduler object", "optimizer"
            if name.startswith("torch.optim.") and name.count(".") == 2 and name.rsplit(".", 1)[1][:1].isupper():
                return "an optimizer object", "optimizer"
            if name.startswith("numpy.") and name not in _NUMPY_PLAIN and not name.startswith("numpy.random.seed"):
                return "a NumPy value", "numpy"
            return None
        if isinstance(call.func, ast.Name):
            cls = ctx.module_class(call.func.id)
            if cls is not None and not ctx.is_module_class(cls) and _plain_class(cls):
                return f"a `{cls.name}` object", "object"
        return None

    def _file_facts(self, ctx: FileContext) -> _FileFacts:
        if self._facts is None:
            self._facts = _FileFacts(ctx)
        return self._facts


def _plain_class(cls: ast.ClassDef) -> bool:
    """A class of the file with no pickling hooks of its own (a config, a dataclass)."""
    if any(isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name in ("__reduce__", "__reduce_ex__")
           for s in cls.body):
        return False
    # A class deriving from something unknown (a dict subclass from a library...) is left out.
    return all(isinstance(b, ast.Name) and b.id == "object" for b in cls.bases) and not cls.keywords


def _scope_nodes(scope: ast.AST) -> list[ast.AST]:
    """The statements of a function (or the module), nested functions and classes excluded."""
    out: list[ast.AST] = []
    stack = list(getattr(scope, "body", []))
    while stack:
        node = stack.pop()
        out.append(node)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        stack.extend(n for n in ast.iter_child_nodes(node) if isinstance(n, ast.stmt))
    return out
