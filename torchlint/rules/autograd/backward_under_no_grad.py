"""TL101: `.backward()` / `torch.autograd.grad` on a tensor computed under no_grad."""

from __future__ import annotations

import ast
from typing import Optional

from torchlint.checker import FileContext
from torchlint.rules.base import Rule, arg_or_keyword, dotted, keyword, literal

_AUTOGRAD_FUNCS = {"torch.autograd.backward": "tensors", "torch.autograd.grad": "outputs"}


class BackwardUnderNoGrad(Rule):
    code = "TL101"
    name = "backward-under-no-grad"
    summary = "backward()/autograd.grad on a tensor computed inside a grad-disabled region"
    severity = "error"
    tags = ("correctness", "autograd")
    requires_text = ('backward', 'autograd')
    precision = "very-high"

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        region = ctx.grad_region
        if region is None or not region.disabled:
            return
        func = node.func
        name = ctx.call_name(node)
        if name not in _AUTOGRAD_FUNCS and isinstance(func, ast.Attribute) and func.attr == "backward":
            target: Optional[ast.AST] = func.value
            what = f"{dotted(func.value)}.backward()"
            call = "backward"
        elif name in _AUTOGRAD_FUNCS:
            target = arg_or_keyword(node, 0, _AUTOGRAD_FUNCS[name])
            what = f"{name}(...)"
            call = name
        else:
            return
        if target is None or not self._computed_in_region(target, region.node, node.lineno, ctx):
            return
        mode = region.kind.rsplit(".", 1)[1]
        self.report(node, f"`{what}` raises: its input, computed under `{mode}`, has no grad_fn",
                    help="Compute the loss outside the grad-disabled block, or wrap it in `torch.enable_grad()`",
                    params={"mode": region.kind, "call": call})

    def _computed_in_region(self, target: ast.AST, region: ast.AST, lineno: int, ctx: FileContext) -> bool:
        if isinstance(target, (ast.Tuple, ast.List)):
            return any(self._computed_in_region(e, region, lineno, ctx) for e in target.elts)
        if isinstance(target, ast.Name):
            start = region.body[0].lineno  # type: ignore[attr-defined]
            end = region.end_lineno or lineno  # type: ignore[attr-defined]
            last = ctx.binding_before(target.id, lineno)
            if last is None:
                return False
            if isinstance(last.node, ast.arg) or not (start <= last.lineno <= end):
                return False
            # A leaf created with requires_grad=True inside the region still has grad.
            value = last.value
            if isinstance(value, ast.Call) and literal(getattr(keyword(value, "requires_grad"), "value", None)) is True:
                return False
            if isinstance(last.node, ast.AugAssign):
                return True
            return isinstance(last.node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and _computes(value)
        # Attributes and subscripts may hold anything computed elsewhere; any other
        # expression (a call, arithmetic) is evaluated right here, under no_grad.
        return _computes(target)


def _computes(expr: Optional[ast.AST]) -> bool:
    """Does evaluating `expr` run tensor operations (which record no graph under no_grad)?
    Collecting existing tensors (`[p.grad for p in params]`, `out[0]`) does not."""
    if isinstance(expr, ast.Call):
        if isinstance(expr.func, ast.Name) and expr.func.id in ("list", "tuple"):
            return any(_computes(a) for a in expr.args)
        return True
    if isinstance(expr, (ast.BinOp, ast.UnaryOp)):
        return True
    if isinstance(expr, (ast.List, ast.Tuple, ast.Set)):
        return any(_computes(e) for e in expr.elts)
    if isinstance(expr, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
        return _computes(expr.elt)
    if isinstance(expr, ast.Subscript):
        return _computes(expr.value)
    if isinstance(expr, ast.IfExp):
        return _computes(expr.body) or _computes(expr.orelse)
    return False
