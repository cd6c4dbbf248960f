"""TL202: a tensor conversion whose result is thrown away."""

from __future__ import annotations

import ast

from torchlint.analysis import inference
from torchlint.analysis.cells import is_displayed_cell_result
from torchlint.checker import FileContext
from torchlint.rules.base import Evidence, Rule, Violation, dotted

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional

_CONVERSIONS = frozenset({"long", "int", "contiguous", "detach", "clone", "pin_memory",
                          "to", "cuda", "cpu", "float", "half", "double", "bfloat16", "type"})


def _methods_defined_here(tree: ast.Module) -> frozenset[str]:
    """Method names that classes of this file define: a user class (an EMA helper, a
    quantised Parameter subclass) whose `.cuda()`/`.pin_memory()` may work in place."""
    return frozenset(stmt.name for cls in tree.body if isinstance(cls, ast.ClassDef)
                     for stmt in cls.body if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)))

# -- evidence (runs only in the --verify worker: see CONTRIBUTING.md) ----------------------
def probe_discarded_conversion(params: dict, device: str) -> tuple[str, str]:
    import torch

    method = str(params.get("method", "float"))
    x = torch.arange(6, device=device).reshape(2, 3).t()
    before = (x.dtype, x.device, x.is_contiguous())
    if method in ("cuda", "pin_memory") and not torch.cuda.is_available():
        return "skipped", f"`.{method}()` needs a CUDA device, and this run has none"
    calls = {"to": ("x.to(torch.float64)", lambda: x.to(torch.float64)),
             "type": ("x.type(torch.float64)", lambda: x.type(torch.float64)),
             "cuda": ("x.cuda()", lambda: x.cuda()), "cpu": ("x.cpu()", lambda: x.cpu())}
    shown, call = calls.get(method, (f"x.{method}()", lambda: getattr(x, method)()))
    result = call()
    after = (x.dtype, x.device, x.is_contiguous())
    if result is x:
        return "not-reproduced", f"on {device} `{shown}` returns x itself: nothing is lost by discarding it"
    if before == after:
        return ("confirmed", f"`{shown}` on a {x.dtype} tensor returned a new tensor ({result.dtype}, {result.device}); "
                             f"x is still {x.dtype} on {x.device}, contiguous={x.is_contiguous()}")
    return "not-reproduced", "the receiver changed in place"


def judge_discarded_conversion(facts: dict, runs: list) -> Optional[tuple[str, str]]:
    import torch
    from _evidence import describe, failed, flag

    rec = flag(runs)
    if rec is None or failed(rec, "the call"):
        return failed(rec, "the call")
    receiver, value, before = rec.get("receiver"), rec.get("value"), rec.get("before")
    if not isinstance(receiver, torch.Tensor) or before is None:
        return "not-reproduced", f"the receiver is a {type(receiver).__name__}, not a tensor"
    if value is receiver:
        return "not-reproduced", "the call returned the tensor itself: it was already in the requested form"
    return ("confirmed", f"the call returned a new tensor, {describe(value)} on {getattr(value, 'device', '?')}; the original "
                         f"is still {describe(receiver)} on {receiver.device}")


class ConversionResultDiscarded(Violation):
    call: str  # `x.to(device)`
    target: str  # what it converts, `x`

    def message(self) -> str:
        return f"`{self.call}` result is discarded: tensor conversions are not in place"

    def help_text(self) -> str:
        return f"Assign it: `{self.target} = {self.call}`"


class DiscardedConversion(Rule):
    """On the 2026-12 held-out corpus (54 projects, independent triage), 0 of 3 findings were true;
    off by default. Enable it with `--extend-select TL202`.

    ## What it does
    Flags an expression statement whose value is a tensor conversion that returns a new tensor
    and is thrown away: `x.to(...)`, `x.cuda()`, `x.cpu()`, `x.float()`, `x.half()`, `x.double()`,
    `x.long()`, `x.int()`, `x.bfloat16()`, `x.contiguous()`, `x.detach()`, `x.clone()`,
    `x.type(...)`, `x.pin_memory()`.

    `nn.Module.to/cuda/cpu/float/half/double/bfloat16/type` *do* act in place, so those methods
    are only flagged on receivers known to be tensors (a `torch.*` result, an argument annotated
    `torch.Tensor`, ...); the tensor-only methods are flagged unless the receiver is known to be
    a module. A whole batch from a `DataLoader` with a custom `collate_fn` (or from an unknown
    iterable) is not taken for a tensor: it may be a dict or a transformers `BatchEncoding`,
    whose `.to()` moves its tensors in place.

    It fires only on values known to be tensors (a `torch.*` result, a Parameter, an argument
    annotated `torch.Tensor`): an unknown receiver may be an object whose `.cuda()`,
    `.pin_memory()` or `.to()` works in place (an EMA helper, a quantised Parameter subclass, a
    custom batch), so it stays silent. It is also silent for a method that a class of the same
    file defines (`def cuda(self): ...`), since the receiver may be one of its instances. In a
    notebook, a cell's last top-level expression is displayed, not discarded (`x.float()` to look
    at it), so it is silent there too.

    ## Why is this bad?
    Tensor conversions never modify the tensor: `x.cuda()` alone leaves `x` on the CPU and the
    next operation fails with `Expected all tensors to be on the same device`, or, for dtype
    conversions, silently keeps the old dtype.

    ## Example
    ```python
    x = torch.randn(8, 4)
    x.to(device)
    ```

    ## Use instead
    ```python
    x = torch.randn(8, 4)
    x = x.to(device)
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [torch.Tensor.to](https://pytorch.org/docs/stable/generated/torch.Tensor.to.html)
    - [torch.nn.Module.to](https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.to)
    """

    code = "TL202"
    name = "discarded-conversion"
    summary = "Tensor conversion result discarded (tensor conversions are not in place)"
    severity = "error"
    default_enabled = False
    tags = ("correctness", "dtype", "device")
    evidence = Evidence(probe=probe_discarded_conversion, slice="call", judge=judge_discarded_conversion)

    def visit_Expr(self, node: ast.Expr, ctx: FileContext) -> None:
        call = node.value
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
            return
        method = call.func.attr
        receiver = call.func.value
        if method not in _CONVERSIONS:
            return
        if isinstance(receiver, ast.Name) and receiver.id in ("self", "cls", "super"):
            return
        if method == "detach" and call.args:
            return
        # Only values known to be tensors: nn.Module and many user objects (EMA helpers,
        # Parameter subclasses) convert in place, so an unknown receiver says nothing.
        if inference.kind_of(receiver, ctx) not in (inference.TENSOR, inference.PARAMETER):
            return
        key = ("methods-defined",)
        defined = ctx.memo.get(key)
        if defined is None:
            defined = ctx.memo[key] = _methods_defined_here(ctx.tree)
        if method in defined:  # type: ignore[operator]
            return
        if method == "type" and not call.args:
            return  # x.type() returns the type string; not a conversion
        if is_displayed_cell_result(ctx.tree, ctx.cell_starts, node):
            return  # a notebook cell's last expression: IPython displays it
        self.report(node, ConversionResultDiscarded(call=dotted(call), target=dotted(receiver)), params={"method": method})
