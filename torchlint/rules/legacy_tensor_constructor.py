"""TL205: `torch.Tensor(3)` and the other legacy typed constructors."""

from __future__ import annotations

import ast

from torchlint.analysis.torch_api import LEGACY_CONSTRUCTORS
from torchlint.checker import FileContext
from torchlint.rules.base import Rule

class LegacyTensorConstructor(Rule):
    code = "TL205"
    name = "legacy-tensor-constructor"
    summary = "Legacy constructor torch.Tensor(...)/torch.FloatTensor(...)"
    severity = "warning"
    tags = ("correctness", "dtype")
    requires_text = ('Tensor',)

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        name = ctx.call_name(node)
        if name not in LEGACY_CONSTRUCTORS:
            return
        first = node.args[0] if node.args else None
        if isinstance(first, ast.Constant) and isinstance(first.value, int) and not isinstance(first.value, bool):
            detail = (f"`{ast.unparse(node)[:50]}` is an *uninitialised* tensor of size {first.value}, "
                      f"not a tensor holding the value {first.value}")
        else:
            detail = (f"`{name}(...)` is a legacy constructor: an integer argument means a size "
                      "(uninitialised memory), a sequence means data, and it ignores `device=`/`dtype=` rules")
        self.report(node, f"{detail}. Use `torch.tensor(data)` for values or `torch.empty(size)` / "
                          "`torch.zeros(size)` for shapes", params={"constructor": name})
