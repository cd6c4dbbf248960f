"""TL908: `Variable(x, volatile=True)`: the flag does nothing since torch 0.4."""

from __future__ import annotations

import ast

from torchlint.checker import FileContext
from torchlint.rules.base import Rule, literal

_VARIABLE = ("torch.autograd.Variable", "torch.autograd.variable.Variable")


class VariableVolatile(Rule):
    code = "TL908"
    name = "variable-volatile"
    summary = "`Variable(..., volatile=True)` has no effect since torch 0.4: the graph is still built"
    severity = "warning"
    tags = ("migration", "autograd")
    precision = "very-high"
    requires_text = ("volatile",)
    verify_note = ("checked once on torch 2.13: it warns 'volatile was removed and now has no effect' and the "
                   "result of an op on it has a grad_fn (tests/test_migrations.py repeats it)")

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        for kw in node.keywords:
            if kw.arg == "volatile" and ctx.call_name(node) in _VARIABLE:
                effect = ("so a forward pass on it still records an autograd graph for the model's parameters "
                          "and keeps activations alive" if literal(kw.value) is not False else "")
                self.report(kw, "`volatile=` was removed in torch 0.4 and has no effect (torch 2.13 only warns)"
                                + (f", {effect}" if effect else "")
                                + ". Run inference under `with torch.no_grad():` (or `torch.inference_mode()`)")
