"""TL204: torch tensors built from NumPy arrays that default to float64."""

from __future__ import annotations

import ast

from torchlint.analysis.imports import QualNames
from torchlint.analysis.torch_api import dtype_name
from torchlint.checker import FileContext
from torchlint.rules.base import Evidence, Rule, Violation, calls_ending, keyword, literal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional

_ALWAYS_FLOAT64 = frozenset({
    "numpy.random.rand", "numpy.random.randn", "numpy.random.random", "numpy.random.uniform",
    "numpy.random.normal", "numpy.random.random_sample", "numpy.random.standard_normal",
})
_FLOAT64_UNLESS_DTYPE = frozenset({
    "numpy.zeros", "numpy.ones", "numpy.empty", "numpy.linspace", "numpy.loadtxt", "numpy.genfromtxt",
    "numpy.eye", "numpy.identity",
})
_TORCH_CONVERTERS = QualNames({"torch.from_numpy", "torch.tensor", "torch.as_tensor"})


def _has_float(value: object) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, (list, tuple)):
        return any(_has_float(v) for v in value)
    return False


# -- evidence (runs only in the --verify worker: see CONTRIBUTING.md) ----------------------
def probe_float64_from_numpy(params: dict, device: str) -> tuple[str, str]:
    import numpy as np
    import torch
    import torch.nn as nn
    from _evidence import first_line, raises

    source = str(params.get("source", "np.random.rand"))
    makers = {"np.random.rand": lambda: np.random.rand(4, 3), "np.random.randn": lambda: np.random.randn(4, 3),
              "np.zeros": lambda: np.zeros((4, 3)), "np.ones": lambda: np.ones((4, 3)),
              "np.empty": lambda: np.empty((4, 3)), "np.linspace": lambda: np.linspace(0, 1, 12).reshape(4, 3),
              "np.random.random": lambda: np.random.random((4, 3)), "np.random.uniform": lambda: np.random.uniform(size=(4, 3)),
              "np.random.normal": lambda: np.random.normal(size=(4, 3)), "np.full": lambda: np.full((4, 3), 0.5),
              "np.array": lambda: np.array([[0.5] * 3] * 4), "np.asarray": lambda: np.asarray([[0.5] * 3] * 4)}
    shown = source if source in makers else "np.random.rand"
    t = torch.from_numpy(makers.get(source, makers["np.random.rand"])())
    converter = str(params.get("converter", "torch.from_numpy"))
    layer = nn.Linear(3, 2).to(device)
    exc = raises(lambda: layer(t.to(device)))
    extra = f"; against float32 weights: {first_line(exc)}" if exc else ""
    if t.dtype == torch.float64:
        return "confirmed", f"`{shown}(...)` with default dtype, converted by {converter}, gives a {t.dtype} tensor{extra}"
    return "not-reproduced", f"dtype {t.dtype}"


def judge_float64_from_numpy(facts: dict, runs: list) -> Optional[tuple[str, str]]:
    import torch
    from _evidence import describe, failed, flag

    rec = flag(runs)
    if rec is None or failed(rec, "the call"):
        return failed(rec, "the call")
    value = rec.get("value")
    if isinstance(value, torch.Tensor) and value.dtype == torch.float64:
        return "confirmed", f"the call returned {describe(value)}"
    return "not-reproduced", f"the call returned {describe(value)}"


class Float64TensorFromNumpy(Violation):
    converter: str  # `torch.from_numpy`
    source: str  # the array's maker, `np.random.rand`
    help = "Pass `dtype=torch.float32` or add `.float()`"

    def message(self) -> str:
        return f"`{self.converter}` of a float64 `{self.source}` array gives a float64 tensor"


class Float64FromNumpy(Rule):
    """## What it does
    Flags `torch.from_numpy`, `torch.tensor` or `torch.as_tensor` applied directly to a NumPy
    call that yields float64 by default (`np.random.rand/randn/random/uniform/normal`,
    `np.zeros/ones/empty/linspace` without `dtype`, `np.full` with a float fill,
    `np.array/asarray` of float literals, `np.loadtxt/genfromtxt`) without a `dtype` argument or
    an immediate `.float()` / `.to(torch.float32)`. Integer arrays are not flagged.

    ## Why is this bad?
    NumPy's default float is float64 and torch keeps it: the tensor takes twice the memory and
    meets float32 weights with `RuntimeError: mat1 and mat2 must have the same dtype, but got
    Double and Float` (or `expected scalar type Float but found Double`), or silently promotes
    computations to float64, which is slow on GPUs.

    ## Example
    ```python
    x = torch.from_numpy(np.random.rand(128, 16))
    ```

    ## Use instead
    ```python
    x = torch.from_numpy(np.random.rand(128, 16)).float()
    # or
    x = torch.tensor(np.random.rand(128, 16), dtype=torch.float32)
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [torch.from_numpy](https://pytorch.org/docs/stable/generated/torch.from_numpy.html)
    """

    code = "TL204"
    name = "float64-from-numpy"
    summary = "Tensor built from a float64 NumPy array without a dtype"
    severity = "warning"
    tags = ("performance", "dtype", "numpy")
    requires_text = ('numpy',)
    evidence = Evidence(probe=probe_float64_from_numpy, slice="call", judge=judge_float64_from_numpy,
                        crash=r"must have the same dtype|expected scalar type \w+ but found Double|found dtype Double")

    def _float64_source(self, node: ast.AST, ctx: FileContext) -> Optional[str]:
        name = ctx.call_name(node)
        if name is None:
            return None
        call = node  # type: ast.Call  # type: ignore[assignment]
        if name in _ALWAYS_FLOAT64:
            return name
        if keyword(call, "dtype") is not None:  # type: ignore[arg-type]
            return None
        if name in _FLOAT64_UNLESS_DTYPE:
            return name
        if name == "numpy.full" and len(call.args) >= 2 and isinstance(literal(call.args[1]), float):  # type: ignore[attr-defined]
            return name
        if name in ("numpy.array", "numpy.asarray") and call.args and len(call.args) == 1 \
                and _has_float(literal(call.args[0])):  # type: ignore[attr-defined]
            return name
        return None

    @calls_ending(_TORCH_CONVERTERS.lasts)
    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        name = ctx.call_among(node, _TORCH_CONVERTERS)
        if name is None or not node.args or keyword(node, "dtype") is not None:
            return
        source = self._float64_source(node.args[0], ctx)
        if source is None:
            return
        parent = ctx.parent
        if isinstance(parent, ast.Attribute) and parent.value is node:
            if parent.attr in ("float", "half", "bfloat16"):
                return
            grand = ctx.parents[-2] if len(ctx.parents) > 1 else None
            if parent.attr in ("to", "type") and isinstance(grand, ast.Call) and any(
                    dtype_name(a, ctx) not in (None, "torch.float64") for a in [*grand.args, *(k.value for k in grand.keywords)]):
                return
        short = source.replace("numpy.", "np.")
        self.report(node, Float64TensorFromNumpy(converter=name, source=short),
                    params={"source": short, "converter": name})
