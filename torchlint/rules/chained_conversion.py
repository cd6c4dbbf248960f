"""TL203: two chained conversions where one `.to(device, dtype)` makes one copy."""

from __future__ import annotations

import ast
from typing import Optional

from torchlint.analysis import inference
from torchlint.analysis.torch_api import conversion_target
from torchlint.checker import FileContext
from torchlint.rules.base import Rule, dotted

_DTYPE_METHODS = frozenset({"float", "half", "double", "bfloat16", "long", "int"})
_DEVICE_METHODS = frozenset({"cuda", "cpu"})


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
        self.report(node, f"`{dotted(node)}` converts {inner} and {outer} in two steps (up to two copies)",
                    help="Convert once with `.to(device, dtype)`")


