"""TL203: two chained conversions where one `.to(device, dtype)` makes one copy."""

from __future__ import annotations

import ast

from torchlint.analysis import inference
from torchlint.analysis.torch_api import conversion_target
from torchlint.checker import FileContext
from torchlint.edits import edit, end_of, has_comment, make_fix, module_alias, text_of
from torchlint.rules.base import Evidence, Rule, Violation, dotted

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Optional

_DTYPE_METHODS = frozenset({"float", "half", "double", "bfloat16", "long", "int"})
_DEVICE_METHODS = frozenset({"cuda", "cpu"})
_METHOD_DTYPES = {"float": "float32", "half": "float16", "double": "float64", "bfloat16": "bfloat16",
                  "long": "int64", "int": "int32"}


def _conversion_kind(call: ast.AST, ctx: FileContext) -> Optional[str]:
    """'device', 'dtype' or None for one link of a method chain."""
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
        return None
    method = call.func.attr
    if method in _DTYPE_METHODS and not call.args:
        return "dtype"
    if method in _DEVICE_METHODS:
        return "device"
    if method != "to" or len(call.args) + len(call.keywords) != 1:
        return None
    if call.args:
        return conversion_target(call.args[0], ctx)
    return conversion_target(call.keywords[0].value, ctx, call.keywords[0].arg)


_FLOAT32_FACTORIES = frozenset(f"torch.{n}" for n in (
    "ones", "zeros", "empty", "full", "rand", "randn", "linspace", "logspace", "eye", "ones_like",
    "zeros_like", "rand_like", "randn_like", "FloatTensor"))


def _already_float32(call: ast.Call, ctx: FileContext) -> bool:
    """`X.float()` where X is known to be float32 already: a factory's default dtype, or a
    name last assigned a `.float()` result."""
    if not isinstance(call.func, ast.Attribute) or call.func.attr != "float":
        return False
    receiver = call.func.value
    while isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute) \
            and receiver.func.attr in _DEVICE_METHODS | {"to"} and ctx.call_name(receiver) is None:
        if receiver.func.attr == "to" and any(conversion_target(a, ctx) == "dtype" for a in receiver.args):
            return False
        receiver = receiver.func.value
    if isinstance(receiver, ast.Name):
        receiver = ctx.value_before(receiver, call.lineno)  # type: ignore[assignment]
    if not isinstance(receiver, ast.Call):
        return False
    name = ctx.call_name(receiver)
    if name in _FLOAT32_FACTORIES:
        return not any(k.arg == "dtype" for k in receiver.keywords) and not (
            name == "torch.full" and len(receiver.args) > 1 and not isinstance(getattr(receiver.args[1], "value", 0.0), float))
    return isinstance(receiver.func, ast.Attribute) and receiver.func.attr == "float" and not receiver.args


# -- evidence (runs only in the --verify worker: see CONTRIBUTING.md) ----------------------
def probe_chained_conversion(params: dict, device: str) -> tuple[str, str]:
    import torch

    x = torch.randint(0, 10, (256, 256), device=device)
    chained = _count_copies(lambda: x.float().to(torch.float64))
    single = _count_copies(lambda: x.to(torch.float64))
    if chained > single:
        return "confirmed", f"the chained form ran {chained} copy kernels, one `.to(...)` ran {single}"
    return "not-reproduced", f"{chained} vs {single} copy kernels"


def _count_copies(fn: Callable[[], Any]) -> int:
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    return sum(1 for e in prof.events() if e.name == "aten::_to_copy")


def judge_chained_conversion(facts: dict, runs: list) -> Optional[tuple[str, str]]:
    from _evidence import failed, flag

    rec = flag(runs)
    if rec is None or failed(rec, "the conversion"):
        return failed(rec, "the conversion")
    copies = _count_copies(rec["thunk"])
    if copies >= 2:
        return "confirmed", f"the chained conversion ran {copies} copy kernels (aten::_to_copy); one .to() runs one"
    return ("not-reproduced", f"the chained conversion ran {copies} copy kernel{'s' if copies != 1 else ''} here: "
                              "one of its steps was a no-op on this device or dtype")


class TwoStepConversion(Violation):
    call: str  # the chain as written, `x.cuda().float()`
    inner: str  # the first conversion's kind: "device" / "dtype"
    outer: str
    help = "Convert once with `.to(device, dtype)`"

    def message(self) -> str:
        return f"`{self.call}` converts {self.inner} and {self.outer} in two steps (up to two copies)"


class ChainedConversion(Rule):
    """Off by default since 0.2: on training code (the triage in issue 9's corpus) fewer than half
    of the findings were sure to copy twice. Whether a conversion copies depends on the tensor's
    current dtype and device, which a linter rarely knows: `.float()` on a tensor that is already
    float32 returns it unchanged, so `x.float().to(device)` then makes one copy, not two. Enable it
    with `--extend-select TL203` when you know your tensors' dtypes. On the held-out corpus of
    December 2026 (54 projects never used for tuning) an independent reviewer found 0 of 20
    sampled findings worth changing. It stays silent where the
    receiver is known to be float32 already (`torch.ones(n).float()`, a name assigned a `.float()`
    result) or may be a module (`(ckpt.get("ema") or ckpt["model"]).to(device).float()`).

    ## What it does
    Flags two chained conversions, one changing the device and one the dtype:
    `x.float().cuda()`, `x.cuda().half()`, `x.to(device).to(dtype)`, `x.cpu().double()`.

    ## Why is this bad?
    Each conversion that changes something allocates a new tensor and copies the data into it,
    so a chain fills an intermediate tensor that is thrown away. One `x.to(device, dtype)`
    states both changes at once and lets torch order them; it does not always save a copy: a
    copy between CPU and GPU that also changes the dtype may still stage through a temporary
    tensor. Where it does save one, in a data pipeline or training step, the saving repeats
    every step.

    ## Example
    ```python
    x = batch.float().cuda()
    ```

    ## Use instead
    ```python
    x = batch.to("cuda", torch.float32)
    ```

    ## Fix safety
    Safe when every link is spelled out: `.float().cuda()` becomes `.to("cuda", torch.float32)`
    (the same device, dtype and result; `"cuda"` is the current device, as for `.cuda()`).
    Links with arguments (`.cuda(1)`, `.cuda(non_blocking=True)`), chains with a comment inside,
    or a file without `import torch` (needed to spell the dtype) get no fix.

    ## References
    - [torch.Tensor.to](https://pytorch.org/docs/stable/generated/torch.Tensor.to.html)
    """

    code = "TL203"
    name = "chained-conversion"
    summary = "Chained device and dtype conversions copy twice; use one .to(device, dtype)"
    severity = "info"
    # Off by default: in the training-code triage under half of the findings were sure to copy
    # twice; the tensor's dtype (and so whether `.float()` copies at all) is rarely known statically.
    default_enabled = False
    tags = ("performance", "dtype", "device")
    evidence = Evidence(generic_probe=True, probe=probe_chained_conversion, slice="thunk", judge=judge_chained_conversion)

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        outer = _conversion_kind(node, ctx)
        if outer is None:
            return
        inner_call = node.func.value  # type: ignore[attr-defined]
        inner = _conversion_kind(inner_call, ctx)
        if inner is None or inner == outer:
            return
        receiver = inner_call.func.value
        if isinstance(receiver, ast.BoolOp) or inference.kind_of(receiver, ctx) == inference.MODULE:
            return  # `(ckpt.get("ema") or ckpt["model"]).to(d).float()`: often a module, moved in place
        if _already_float32(inner_call, ctx) or _already_float32(node, ctx):
            return  # `.float()` on a float32 tensor returns it unchanged: one copy, not two
        self.report(node, TwoStepConversion(call=dotted(node), inner=inner, outer=outer), fix=_fix(node, inner_call, receiver, inner, ctx))


def _target_text(call: ast.Call, kind: str, ctx: FileContext) -> Optional[str]:
    """What one link converts to, as source text for `.to(device, dtype)`."""
    method = call.func.attr  # type: ignore[attr-defined]
    if method == "to":
        value = call.args[0] if call.args else call.keywords[0].value
        return text_of(ctx.source, value)
    if call.args or call.keywords:
        return None  # `.cuda(1)`, `.cuda(non_blocking=True)`: left as they are
    if kind == "device":
        return f'"{method}"'
    torch = module_alias(ctx.imports.aliases, "torch")
    return f"{torch}.{_METHOD_DTYPES[method]}" if torch else None


def _fix(outer: ast.Call, inner: ast.Call, receiver: ast.AST, inner_kind: str, ctx: FileContext):  # type: ignore[no-untyped-def]
    """`x.float().cuda()` -> `x.to("cuda", torch.float32)`: the same result, one copy."""
    first = _target_text(inner, inner_kind, ctx)
    second = _target_text(outer, "dtype" if inner_kind == "device" else "device", ctx)
    if first is None or second is None:
        return None
    device, dtype = (first, second) if inner_kind == "device" else (second, first)
    source = ctx.source
    chain = text_of(source, outer)[len(text_of(source, receiver)):]
    if has_comment(chain) or not text_of(source, outer).startswith(text_of(source, receiver)):
        return None
    return make_fix(f"Convert once: `.to({device}, {dtype})`",
                    [edit(end_of(source, receiver), end_of(source, outer), f".to({device}, {dtype})")])


