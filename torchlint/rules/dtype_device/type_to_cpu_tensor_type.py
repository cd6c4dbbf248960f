"""TL209: `.type(torch.FloatTensor)` on a tensor that is on the GPU, which moves it to the CPU."""

from __future__ import annotations

import ast

from torchlint.analysis.dominance import reaches_here
from torchlint.analysis.torch_api import conversion_target
from torchlint.checker import FileContext
from torchlint.edits import make_fix, replace, text_of
from torchlint.rules.base import Evidence, Rule, Violation, dotted

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional

# The CPU tensor type classes and the dtype method that converts in place of each.
_CPU_TYPES = {
    "FloatTensor": "float", "DoubleTensor": "double", "HalfTensor": "half", "BFloat16Tensor": "bfloat16",
    "LongTensor": "long", "IntTensor": "int", "ShortTensor": "short", "ByteTensor": "byte",
    "CharTensor": "char", "BoolTensor": "bool",
}
# Methods that keep a tensor on its device.
_SAME_DEVICE = frozenset({
    "float", "double", "half", "bfloat16", "long", "int", "bool", "contiguous", "detach", "clone", "view",
    "reshape", "permute", "transpose", "squeeze", "unsqueeze", "flatten", "requires_grad_",
})
_FACTORIES = frozenset({"torch.zeros", "torch.ones", "torch.empty", "torch.full", "torch.rand", "torch.randn",
                        "torch.randint", "torch.arange", "torch.tensor", "torch.as_tensor", "torch.linspace",
                        "torch.eye"})


def probe_cpu_type(params: dict, device: str) -> tuple[str, str]:
    """The --verify fact probe: does `.type(<the type>)` take a GPU tensor off the GPU?"""
    import torch

    name = str(params.get("type", "torch.FloatTensor"))
    target = torch
    for part in name.split(".")[1:]:
        target = getattr(target, part, None)  # type: ignore[assignment]
    if target is None:
        return "not-applicable", f"this torch has no {name}"
    if getattr(target, "is_cuda", False):
        return "not-reproduced", f"{name} is a CUDA type: .type() keeps the tensor on the GPU"
    if not torch.cuda.is_available():
        return "skipped", f"needs CUDA to show the move ({name} is a CPU type on this torch)"
    moved = torch.ones(2, device="cuda").type(target)  # type: ignore[call-overload]
    if moved.device.type == "cpu":
        return "confirmed", f"torch.ones(2, device='cuda').type({name}) is on {moved.device}"
    return "not-reproduced", f"torch.ones(2, device='cuda').type({name}) stayed on {moved.device}"


def _type_name(arg: ast.AST, ctx: FileContext) -> Optional[str]:
    """`FloatTensor` for `torch.FloatTensor` or the string `'torch.FloatTensor'` (CPU types only)."""
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        name: Optional[str] = arg.value
    else:
        name = ctx.qualname(arg)
    if name is None or not name.startswith("torch.") or name.count(".") != 1:
        return None
    short = name[len("torch."):]
    return short if short in _CPU_TYPES else None


def on_accelerator(expr: ast.AST, ctx: FileContext, lineno: int, depth: int = 0) -> bool:
    """Was `expr` put on an accelerator: `.cuda()`, `.to(device)`, a factory with `device=`
    (not "cpu"), through same-device methods and plain assignments?"""
    if depth > 4:
        return False
    if isinstance(expr, ast.Name):
        binding = ctx.binding_before(expr.id, lineno - 1)
        if binding is None or binding.index is not None or not isinstance(binding.node, ast.Assign) \
                or (depth == 0 and not reaches_here(ctx, binding.node)):
            return False
        return binding.value is not None and on_accelerator(binding.value, ctx, binding.lineno, depth + 1)
    if not isinstance(expr, ast.Call):
        return False
    func = expr.func
    if ctx.call_name(expr) in _FACTORIES:
        device = next((k.value for k in expr.keywords if k.arg == "device"), None)
        return device is not None and _names_accelerator(device, ctx)
    if not isinstance(func, ast.Attribute):
        return False
    if func.attr == "cuda":
        return True
    if func.attr == "to":
        for kw in expr.keywords:
            if kw.arg == "device":
                return _names_accelerator(kw.value, ctx)
        return any(conversion_target(a, ctx) == "device" and _names_accelerator(a, ctx) for a in expr.args)
    return func.attr in _SAME_DEVICE and on_accelerator(func.value, ctx, lineno, depth + 1)


def _names_accelerator(device: ast.AST, ctx: FileContext) -> bool:
    if isinstance(device, ast.Constant):
        return isinstance(device.value, str) and not device.value.startswith("cpu")
    if isinstance(device, ast.Call) and ctx.call_name(device) == "torch.device":
        return bool(device.args) and _names_accelerator(device.args[0], ctx)
    return True  # a variable: the hazard is there whenever it names a GPU


class TypeMovesToCpu(Violation):
    type: str  # `FloatTensor`
    tensor: str  # the receiver as written, shown when short
    method: str  # what keeps the device, `float`

    def message(self) -> str:
        shown = self.tensor if len(self.tensor) <= 30 else "x"
        return f"`.type(torch.{self.type})` returns a CPU tensor: it moves `{shown}` off the GPU"

    def help_text(self) -> str:
        return f"Use `.{self.method}()` or `.to(dtype)`, which keep the device"


class TypeToCpuTensorType(Rule):
    """On the 2026-12 held-out corpus (54 projects, independent triage), 0 of 1 findings were true (a deliberate CPU copy compared with `.item()`);
    off by default. Enable it with `--extend-select TL209`.

    ## What it does
    Flags `x.type(torch.FloatTensor)` (or another CPU tensor type: `DoubleTensor`,
    `LongTensor`, ..., or the same name as a string, `'torch.FloatTensor'`) where `x` was put
    on an accelerator in the same function: by `.cuda()`, by `.to(device)` or `.to("cuda")`, or
    by a factory with `device=` that is not `"cpu"`, directly or through a plain assignment.
    Tensors of unknown device, a move made in another branch of an `if`, a `.type(...)`
    immediately moved again (`.type(T).cuda()`), and the `torch.cuda.*Tensor` types are not
    flagged.

    ## Why is this bad?
    A legacy type class names a device as well as a dtype: `torch.FloatTensor` is "float32 on the
    CPU". Checked on torch 2.13: `torch.FloatTensor.is_cuda` is `False`, and `.type()` with it
    returns a CPU copy of a CUDA tensor. The conversion that was meant to change the dtype also
    moves the data to the host: the next operation with a GPU tensor raises `Expected all
    tensors to be on the same device`, or the rest of the step silently runs on the CPU.

    ## Example
    ```python
    x = batch.to(device)
    x = x.type(torch.FloatTensor)
    ```

    ## Use instead
    ```python
    x = batch.to(device)
    x = x.float()  # or x.to(torch.float32)
    ```

    ## Fix safety
    Unsafe (applied only with `--unsafe-fixes`): `.float()` (`.long()`, ...) converts the
    dtype and keeps the tensor where it is, which is the intent, but code after the line that
    relied on getting a CPU tensor (a `.numpy()` call) would then need a `.cpu()`.

    ## References
    - [torch.Tensor.type](https://pytorch.org/docs/stable/generated/torch.Tensor.type.html)
    - [Tensor attributes: torch.dtype](https://pytorch.org/docs/stable/tensor_attributes.html)
    """

    code = "TL209"
    default_enabled = False
    name = "type-to-cpu-tensor-type"
    summary = "`.type(torch.FloatTensor)` on a GPU tensor moves it to the CPU; use `.float()`/`.to(dtype)`"
    severity = "warning"
    tags = ("correctness", "device")
    precision = "high"
    requires_text = (".type(",)
    evidence = Evidence(probe=probe_cpu_type)

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        func = node.func
        if not isinstance(func, ast.Attribute) or func.attr != "type" or len(node.args) != 1 or node.keywords:
            return
        short = _type_name(node.args[0], ctx)
        if short is None or not on_accelerator(func.value, ctx, node.lineno):
            return
        parent = ctx.parent
        if isinstance(parent, ast.Attribute) and parent.attr in ("cuda", "to"):
            return  # moved straight back: a round trip, not a silent move
        method = _CPU_TYPES[short]
        fix = make_fix(f"Use `.{method}()`", [replace(ctx.source, node, f"{text_of(ctx.source, func.value)}.{method}()")],
                       applicability="unsafe")
        self.report(node, TypeMovesToCpu(type=short, tensor=dotted(func.value), method=method),
                    params={"type": f"torch.{short}"}, fix=fix)
