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
                if literal(kw.value) is False:
                    self.report(kw, "`volatile=` has no effect since torch 0.4", help="Remove it")
                else:
                    self.report(kw, "`volatile=` has no effect since torch 0.4: a forward pass still builds a graph",
                                help="Run inference under `with torch.no_grad():`")
