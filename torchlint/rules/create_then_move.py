"""TL801: `torch.zeros(...).to(device)`: create on the device instead."""

from __future__ import annotations

import ast

from torchlint.analysis.torch_api import conversion_target
from torchlint.checker import FileContext
from torchlint.rules.base import Rule

_FACTORIES = frozenset(f"torch.{n}" for n in (
    "zeros", "ones", "empty", "full", "rand", "randn", "randint", "randperm", "arange", "linspace",
    "logspace", "eye", "tensor", "zeros_like", "ones_like", "empty_like", "full_like", "rand_like",
    "randn_like"))


class CreateThenMove(Rule):
    code = "TL801"
    name = "create-then-move"
    summary = "Tensor created on CPU then moved; create it on the device"
    severity = "info"
    tags = ("performance", "device")
    requires_text = ('.to(', '.cuda(')

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        func = node.func
        if not isinstance(func, ast.Attribute) or func.attr not in ("to", "cuda"):
            return
        inner = func.value
        factory = ctx.call_name(inner)
        if factory not in _FACTORIES:
            return
        if any(k.arg == "device" for k in inner.keywords):  # type: ignore[attr-defined]
            return
        if func.attr == "to":
            targets = [conversion_target(a, ctx) for a in node.args[:1]] + [
                conversion_target(k.value, ctx, k.arg) for k in node.keywords if k.arg in ("device", "dtype")]
            if "device" not in targets:
                return  # a dtype change, or not known to be a move
        self.report(node, f"`{factory}(...)` is allocated on the CPU, then copied to the device",
                    help=f"Pass `device=` to `{factory}`")
