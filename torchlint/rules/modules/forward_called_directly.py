"""TL703: `model.forward(x)` bypasses hooks."""

from __future__ import annotations

import ast

from torchlint.analysis import inference
from torchlint.checker import FileContext
from torchlint.rules.base import Rule, dotted


class ForwardCalledDirectly(Rule):
    code = "TL703"
    name = "forward-called-directly"
    summary = "module.forward(x) called directly skips hooks"
    severity = "warning"
    tags = ("correctness", "module")
    requires_text = ('.forward',)

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        func = node.func
        if not isinstance(func, ast.Attribute) or func.attr != "forward":
            return
        receiver = func.value
        if isinstance(receiver, ast.Name) and receiver.id in ("self", "cls"):
            return
        if isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Name) and receiver.func.id == "super":
            return
        # Only receivers known to be nn.Modules: many other objects have a `forward` method
        # (skorch nets, ONNX/OpenCV inference backends), and `Base.forward(self, x)` or
        # `type(m).forward(m, x)` is an unbound call of a class's implementation.
        if inference.kind_of(receiver, ctx) != inference.MODULE:
            return
        self.report(node, f"`{dotted(func)}(...)` skips the module's hooks",
                    help=f"Call the module: `{dotted(receiver)}(...)`")
