"""TL109: `require_grad` (missing s) instead of `requires_grad`."""

from __future__ import annotations

import ast

from torchlint.checker import FileContext
from torchlint.rules.base import Rule, dotted

_TYPOS = frozenset({"require_grad", "requires_grads", "require_grads", "requiresgrad", "requires_gradient"})


class RequiresGradTypo(Rule):
    code = "TL109"
    name = "requires-grad-typo"
    summary = "`require_grad` typo: the flag is never set"
    severity = "error"
    tags = ("correctness", "autograd")
    requires_text = ('require_grad', 'requires_grads', 'requiresgrad', 'requires_gradient')
    precision = "very-high"

    def visit_Assign(self, node: ast.Assign, ctx: FileContext) -> None:
        for target in node.targets:
            if isinstance(target, ast.Attribute) and target.attr in _TYPOS:
                self.report(target, f"`{dotted(target)}` is a typo: `requires_grad` stays unchanged",
                            help="Write `.requires_grad`")

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        for kw in node.keywords:
            if kw.arg in _TYPOS:
                name = ctx.call_name(node)
                if name is not None and name.startswith("torch."):
                    self.report(kw, f"`{name}` raises on `{kw.arg}=`: no such parameter",
                                help="Write `requires_grad=`")
