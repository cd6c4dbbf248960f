"""TL109: `require_grad` (missing s) instead of `requires_grad`."""

from __future__ import annotations

import ast

from torchlint.checker import FileContext
from torchlint.fix.edits import Fix, edit, end_of, make_fix, start_of
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
                            help="Write `.requires_grad`",
                            fix=_rename(ctx, end_of(ctx.source, target), target.attr, from_end=True))

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        for kw in node.keywords:
            if kw.arg in _TYPOS:
                name = ctx.call_name(node)
                if name is not None and name.startswith("torch."):
                    self.report(kw, f"`{name}` raises on `{kw.arg}=`: no such parameter",
                                help="Write `requires_grad=`", fix=_rename(ctx, start_of(ctx.source, kw), kw.arg))


def _rename(ctx: FileContext, anchor: tuple[int, int], typo: str, from_end: bool = False) -> Fix:
    """Replace the misspelt name, which ends at `anchor` (an attribute's last token) or
    starts there (a keyword argument's name)."""
    row, col = anchor
    start, end = ((row, col - len(typo)), anchor) if from_end else (anchor, (row, col + len(typo)))
    return make_fix("Rename to `requires_grad`", [edit(start, end, "requires_grad")])
