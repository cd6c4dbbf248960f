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
        short = name.replace("torch.", "", 1)  # type: ignore[union-attr]
        if isinstance(first, ast.Constant) and isinstance(first.value, int) and not isinstance(first.value, bool):
            message = f"`{short}({first.value})` is an uninitialised tensor of size {first.value}, not the value"
        else:
            message = f"Legacy constructor `{short}`: an int means a size, a sequence means data"
        self.report(node, message, help="Use `torch.tensor(data)` for values, `torch.zeros(size)` for shapes",
                    params={"constructor": name})
