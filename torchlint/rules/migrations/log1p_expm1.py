"""TL905: `torch.log(1 + x)` and `torch.exp(x) - 1` instead of `torch.log1p` / `torch.expm1`."""

from __future__ import annotations

import ast
from typing import Optional

from torchlint.checker import FileContext
from torchlint.fix.edits import make_fix, replace, text_of
from torchlint.rules.base import Rule


def _is_one(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) in (int, float) and node.value == 1


def _plus_one_operand(node: ast.AST) -> Optional[ast.AST]:
    """`x` for `1 + x` or `x + 1`."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        if _is_one(node.left) and not _is_one(node.right):
            return node.right
        if _is_one(node.right) and not _is_one(node.left):
            return node.left
    return None


class Log1pExpm1(Rule):
    code = "TL905"
    name = "log1p-expm1"
    summary = "`torch.log(1 + x)` / `torch.exp(x) - 1` lose precision; use log1p / expm1"
    severity = "info"
    # Off by default: on the training corpus all 4 findings were integer durations whose
    # result is rounded afterwards (fairseq TTS), where the lost precision cannot matter.
    default_enabled = False
    tags = ("numerics",)
    precision = "very-high"
    requires_text = ("log", "exp")
    verify_note = ("a precision claim shown once on torch 2.13 (float32 x = 1e-8: log(1 + x) is 0.0, "
                   "log1p(x) is 1e-08); the doc quotes it")

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        if len(node.args) != 1 or node.keywords or ctx.call_name(node) != "torch.log":
            return
        x = _plus_one_operand(node.args[0])
        if x is None:
            return
        func = text_of(ctx.source, node.func)
        new = f"{func}1p({text_of(ctx.source, x)})"
        # Fixed only when spelled through the module: a bare imported `log` has no `log1p` beside it.
        fix = make_fix("Use `torch.log1p`", [replace(ctx.source, node, new)]) \
            if isinstance(node.func, ast.Attribute) else None
        self.report(node, "`torch.log(1 + x)` loses every digit of a small `x` (float32: 0 below ~6e-8)",
                    help="Use `torch.log1p(x)`", fix=fix)

    def visit_BinOp(self, node: ast.BinOp, ctx: FileContext) -> None:
        if not isinstance(node.op, ast.Sub) or not _is_one(node.right):
            return
        call = node.left
        if not isinstance(call, ast.Call) or len(call.args) != 1 or call.keywords \
                or not isinstance(call.func, ast.Attribute) or ctx.call_name(call) != "torch.exp":
            return
        func = text_of(ctx.source, call.func)
        new = f"{func[:-3]}expm1({text_of(ctx.source, call.args[0])})"
        self.report(node, "`torch.exp(x) - 1` loses every digit of a small `x` (float32: 0 below ~6e-8)",
                    help="Use `torch.expm1(x)`",
                    fix=make_fix("Use `torch.expm1`", [replace(ctx.source, node, new)]))
