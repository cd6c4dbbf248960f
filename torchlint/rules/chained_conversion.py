"""TL203: two chained conversions where one `.to(device, dtype)` makes one copy."""

from __future__ import annotations

import ast
from typing import Optional

from torchlint.analysis import inference
from torchlint.analysis.torch_api import dtype_name, is_int_dtype
from torchlint.checker import FileContext
from torchlint.rules.base import Rule, dotted

_DTYPE_METHODS = frozenset({"float", "half", "double", "bfloat16", "long", "int"})
_DEVICE_METHODS = frozenset({"cuda", "cpu"})
_DEVICE_STRINGS = ("cuda", "cpu", "mps", "xpu", "meta")


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
    arg = call.args[0] if call.args else call.keywords[0].value
    key = call.keywords[0].arg if call.keywords else None
    if key == "dtype" or dtype_name(arg, ctx) or is_int_dtype(arg, ctx):
        return "dtype"
    if key == "device":
        return "device"
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value.split(":")[0] in _DEVICE_STRINGS:
        return "device"
    if ctx.call_name(arg) == "torch.device":
        return "device"
    if isinstance(arg, ast.Name) and arg.id in ("device", "dev") or isinstance(arg, ast.Attribute) and arg.attr == "device":
        return "device"
    return None


class ChainedConversion(Rule):
    code = "TL203"
    name = "chained-conversion"
    summary = "Chained device and dtype conversions copy twice; use one .to(device, dtype)"
    severity = "info"
    tags = ("performance", "dtype", "device")

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        outer = _conversion_kind(node, ctx)
        if outer is None:
            return
        inner_call = node.func.value  # type: ignore[attr-defined]
        inner = _conversion_kind(inner_call, ctx)
        if inner is None or inner == outer:
            return
        receiver = inner_call.func.value
        if inference.kind_of(receiver, ctx) == inference.MODULE:
            return
        self.report(
            node,
            f"`{dotted(node)}` converts {inner} then {outer} in two steps, copying the tensor twice; "
            "one `.to(device, dtype)` (or `.to(device=..., dtype=...)`) converts with a single copy",
        )


