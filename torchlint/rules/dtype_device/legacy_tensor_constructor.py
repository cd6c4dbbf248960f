"""TL205: `torch.Tensor(3)` and the other legacy typed constructors."""

from __future__ import annotations

import ast

from torchlint.analysis.torch_api import LEGACY_CONSTRUCTORS
from torchlint.checker import FileContext
from torchlint.edits import make_fix, module_alias, replace, text_of
from torchlint.rules.base import Evidence, Rule, Violation

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional

_DTYPES = {"FloatTensor": "float32", "DoubleTensor": "float64", "HalfTensor": "float16",
           "BFloat16Tensor": "bfloat16", "LongTensor": "int64", "IntTensor": "int32", "ShortTensor": "int16",
           "ByteTensor": "uint8", "CharTensor": "int8", "BoolTensor": "bool"}


def _numbers_only(node: ast.AST) -> bool:
    """A list/tuple literal of numbers (nested, signed): what the legacy constructor and
    torch.tensor read the same way."""
    if isinstance(node, (ast.List, ast.Tuple)):
        return all(_numbers_only(e) for e in node.elts)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return _numbers_only(node.operand)
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool) \
        or isinstance(node, ast.Constant) and isinstance(node.value, bool)


def _fix(node: ast.Call, name: str, ctx: FileContext):  # type: ignore[no-untyped-def]
    """`torch.FloatTensor([1, 2])` -> `torch.tensor([1, 2], dtype=torch.float32)`."""
    if len(node.args) != 1 or node.keywords or not isinstance(node.args[0], ast.List) \
            or not _numbers_only(node.args[0]):
        return None
    torch = module_alias(ctx.imports.aliases, "torch")
    if torch is None:
        return None
    kind = name.rsplit(".", 1)[1]
    # torch.Tensor(list) has the default dtype; torch.tensor would infer int64 from ints.
    dtype = f"{torch}.{_DTYPES[kind]}" if kind in _DTYPES else f"{torch}.get_default_dtype()"
    device = ', device="cuda"' if name.startswith("torch.cuda.") else ""
    data = text_of(ctx.source, node.args[0])
    return make_fix(f"Use `{torch}.tensor(..., dtype={dtype})`",
                    [replace(ctx.source, node, f"{torch}.tensor({data}, dtype={dtype}{device})")])

# -- evidence (runs only in the --verify worker: see CONTRIBUTING.md) ----------------------
def probe_legacy_constructor(params: dict, device: str) -> tuple[str, str]:
    import math

    import torch

    # The constructor the flagged code calls (torch.cuda.* types are tried as their CPU twin).
    name = str(params.get("constructor", "torch.Tensor")).replace("torch.cuda.", "torch.")
    ctor = getattr(torch, name.split(".")[-1], None)
    if not (isinstance(ctor, type) and name.split(".")[-1].endswith("Tensor")):
        name, ctor = "torch.Tensor", torch.Tensor
    arguments = params.get("arguments")
    if arguments == "values":
        t = ctor([3])
        return ("not-reproduced", f"the code passes a sequence of values, which `{name}` holds (`{name}([3])` is "
                                  f"{t.tolist()}): no uninitialised memory")
    if arguments != "sizes":
        return "skipped", "the arguments are not literals: whether the code passes sizes or values is not known"
    sizes = [int(n) for n in str(params.get("sizes", "")).split(",") if n.strip().lstrip("-").isdigit()]
    shown = f"{name}({', '.join(map(str, sizes))})"
    if not sizes or min(sizes) < 0 or math.prod(sizes) > 2**20:
        return "skipped", f"`{shown}`: sizes that cannot be allocated here (negative, or over 2**20 elements)"
    t = ctor(*sizes)
    if tuple(t.shape) == tuple(sizes):
        return ("confirmed", f"`{shown}` with int arguments has shape {tuple(t.shape)} and uninitialised values "
                             f"({t.dtype}), not the value{'s' if len(sizes) > 1 else ''} {', '.join(map(str, sizes))}; "
                             "with a list of values it holds those values")
    return "not-reproduced", f"`{shown}` has shape {tuple(t.shape)}"


def _argument_facts(call: ast.Call) -> dict[str, object]:
    """What --verify's probe needs: the sizes when every argument is an int literal
    (`Tensor(2, 3, 4)`), "values" for one sequence literal, otherwise "unknown"."""
    if call.keywords or any(isinstance(a, ast.Starred) for a in call.args):
        return {"arguments": "unknown"}
    sizes = [a.value for a in call.args if isinstance(a, ast.Constant) and type(a.value) is int]
    if call.args and len(sizes) == len(call.args):
        return {"arguments": "sizes", "sizes": ",".join(map(str, sizes))}
    if len(call.args) == 1 and isinstance(call.args[0], (ast.List, ast.Tuple)):
        return {"arguments": "values"}
    return {"arguments": "unknown"}


def judge_legacy_constructor(facts: dict, runs: list) -> Optional[tuple[str, str]]:
    from _evidence import describe, failed, flag

    rec = flag(runs)
    if rec is None or failed(rec, "the call"):
        return failed(rec, "the call")
    args, value = rec["args"], rec.get("value")
    if args and all(isinstance(a, int) and not isinstance(a, bool) for a in args):
        if len(args) > 1:  # `Tensor(2, 3, 4)`: no sequence of values is spelled so; the shape was meant
            return "not-reproduced", f"the call asked for the shape {tuple(args)} and built {describe(value)}"
        return ("confirmed", f"the call with {args[0]} returned {describe(value)} of uninitialised memory, not a "
                             f"tensor holding {args[0]}")
    return "not-reproduced", f"the call built {describe(value)} from the given values"


# In-place initialisers: chained on the constructor, they overwrite all of its memory.
_FILLS_IN_PLACE = frozenset({"random_", "uniform_", "normal_", "fill_", "zero_", "copy_", "bernoulli_",
                             "exponential_", "geometric_", "cauchy_", "log_normal_"})
_LEGACY_HELP = "Use `torch.tensor(data)` for values, `torch.zeros(size)` for shapes"


class LegacyConstructorOfSize(Violation):
    constructor: str  # `FloatTensor`
    size: int
    help = _LEGACY_HELP

    def message(self) -> str:
        return f"`{self.constructor}({self.size})` is an uninitialised tensor of size {self.size}, not the value"


class LegacyConstructor(Violation):
    constructor: str
    help = _LEGACY_HELP

    def message(self) -> str:
        return f"Legacy constructor `{self.constructor}`: an int means a size, a sequence means data"


class LegacyTensorConstructor(Rule):
    """On the 2026-12 held-out corpus (54 projects, independent triage), 0 of 100 findings were true;
    off by default. Enable it with `--extend-select TL205`.

    ## What it does
    Flags calls of the legacy constructors `torch.Tensor(...)`, `torch.FloatTensor(...)`,
    `torch.LongTensor(...)`, `torch.cuda.FloatTensor(...)` and the other typed tensor classes.
    `isinstance(x, torch.Tensor)`, annotations and base classes are not flagged, nor is a
    constructor whose memory an in-place initialiser chained on it overwrites at once
    (`torch.Tensor(5).random_(10)`, `.uniform_()`, `.fill_()`, `.zero_()`).

    Under `--verify`, a call with several int arguments (`torch.Tensor(2, 3, 4)`) is
    `not-reproduced`: no sequence of values is spelled that way, so the shape was meant.

    ## Why is this bad?
    The legacy constructors are ambiguous: `torch.Tensor(3)` is an *uninitialised* tensor of size
    3 (whatever was in memory), not a tensor holding 3, while `torch.Tensor([3])` holds 3. They
    also ignore the default dtype and device conventions of the factory functions.

    ## Example
    ```python
    t = torch.Tensor(3)
    labels = torch.LongTensor(batch_labels)
    ```

    ## Use instead
    ```python
    t = torch.empty(3)         # a shape
    t = torch.tensor([3.0])    # a value
    labels = torch.tensor(batch_labels, dtype=torch.long)
    ```

    ## Fix safety
    Safe, only for a list literal of numbers: `torch.FloatTensor([1, 2])` becomes
    `torch.tensor([1, 2], dtype=torch.float32)` (`torch.Tensor([...])` keeps the default dtype
    with `dtype=torch.get_default_dtype()`, since `torch.tensor` would infer `int64` from
    integers; `torch.cuda.*Tensor` adds `device="cuda"`). A size argument (`torch.Tensor(3)`) or
    any other argument has no fix: which of the two meanings was intended is not certain.

    ## References
    - [torch.tensor](https://pytorch.org/docs/stable/generated/torch.tensor.html)
    - [Tensor: constructors](https://pytorch.org/docs/stable/tensors.html)
    """

    code = "TL205"
    name = "legacy-tensor-constructor"
    summary = "Legacy constructor torch.Tensor(...)/torch.FloatTensor(...)"
    severity = "warning"
    default_enabled = False
    tags = ("correctness", "dtype")
    requires_text = ('Tensor',)
    evidence = Evidence(probe=probe_legacy_constructor, slice="call", judge=judge_legacy_constructor)

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        name = ctx.call_name(node)
        if name not in LEGACY_CONSTRUCTORS:
            return
        first = node.args[0] if node.args else None
        parent = ctx.parent
        if isinstance(parent, ast.Attribute) and parent.value is node and parent.attr in _FILLS_IN_PLACE:
            return  # `Tensor(5).random_(10)`: a size, filled at once; nothing uninitialised is read
        short = name.replace("torch.", "", 1)  # type: ignore[union-attr]
        # One int: a size where a value may have been meant. Several are plainly a shape.
        if len(node.args) == 1 and isinstance(first, ast.Constant) and isinstance(first.value, int) \
                and not isinstance(first.value, bool):
            violation: Violation = LegacyConstructorOfSize(constructor=short, size=first.value)
        else:
            violation = LegacyConstructor(constructor=short)
        self.report(node, violation, params={"constructor": name, **_argument_facts(node)}, fix=_fix(node, name, ctx))
