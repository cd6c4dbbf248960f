"""TL202: a tensor conversion whose result is thrown away."""

from __future__ import annotations

import ast

from torchlint.analysis import inference
from torchlint.checker import FileContext
from torchlint.rules.base import Rule, dotted

# Tensor-only methods: no nn.Module has them, so any receiver but a known module counts.
_TENSOR_ONLY = frozenset({"long", "int", "contiguous", "detach", "clone", "pin_memory"})
# nn.Module has these too and applies them in place: only flag receivers known to be tensors.
_SHARED_WITH_MODULE = frozenset({"to", "cuda", "cpu", "float", "half", "double", "bfloat16", "type"})


class DiscardedConversion(Rule):
    code = "TL202"
    name = "discarded-conversion"
    summary = "Tensor conversion result discarded (tensor conversions are not in place)"
    severity = "error"
    tags = ("correctness", "dtype", "device")

    def visit_Expr(self, node: ast.Expr, ctx: FileContext) -> None:
        call = node.value
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
            return
        method = call.func.attr
        receiver = call.func.value
        if method not in _TENSOR_ONLY and method not in _SHARED_WITH_MODULE:
            return
        if isinstance(receiver, ast.Name) and receiver.id in ("self", "cls", "super"):
            return
        if method == "detach" and call.args:
            return
        kind = inference.kind_of(receiver, ctx)
        if method in _SHARED_WITH_MODULE:
            if kind not in (inference.TENSOR, inference.PARAMETER):
                return
        elif kind == inference.MODULE:
            return
        if method == "type" and not call.args:
            return  # x.type() returns the type string; not a conversion
        target = dotted(receiver)
        self.report(node, f"`{dotted(call)}` result is discarded: tensor conversions are not in place",
                    help=f"Assign it: `{target} = {dotted(call)}`", params={"method": method})
