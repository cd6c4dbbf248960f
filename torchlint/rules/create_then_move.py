"""TL801: `torch.zeros(...).to(device)`: create on the device instead."""

from __future__ import annotations

import ast

from torchlint.analysis.torch_api import dtype_name, is_int_dtype
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
            args = [*node.args, *(k.value for k in node.keywords if k.arg in (None, "device", "dtype"))]
            if not args or all(dtype_name(a, ctx) or is_int_dtype(a, ctx) for a in args) \
                    or all(k.arg == "dtype" for k in node.keywords) and not node.args:
                return  # a dtype change only
        short = factory
        self.report(node, f"`{short}(...)` allocates on the CPU and `.{func.attr}(...)` then copies it to the "
                          f"device: two allocations and a host-to-device copy. Pass `device=` to `{short}`")
