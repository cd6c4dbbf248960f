"""TL103: a training loop that never resets gradients."""

from __future__ import annotations

import ast

from torchlint.analysis.loops import is_backward, is_optimizer_step, is_zero_grad
from torchlint.analysis.scopes import iter_scope
from torchlint.checker import FileContext
from torchlint.rules.base import Rule


def _per_context_gradients(loop: ast.AST, backward: ast.Call, ctx: FileContext) -> bool:
    """Distributed autograd accumulates into a fresh context per `with dist_autograd.context()`."""
    name = ctx.call_name(backward) or ""
    if name.startswith("torch.distributed.autograd."):
        return True
    contexts = [item.context_expr for n in iter_scope(loop.body) if isinstance(n, (ast.With, ast.AsyncWith))  # type: ignore[attr-defined]
                for item in n.items]
    contexts += [item.context_expr for region in ctx.parents if isinstance(region, (ast.With, ast.AsyncWith))
                 for item in region.items]
    return any((ctx.call_name(c) or "").startswith("torch.distributed.autograd.") for c in contexts)


class MissingZeroGrad(Rule):
    code = "TL103"
    name = "missing-zero-grad"
    summary = "Loop calls backward() and step() but never resets gradients"
    severity = "warning"
    tags = ("correctness", "training-loop")
    requires_text = ('backward',)

    def _check(self, node: ast.AST, ctx: FileContext) -> None:
        backward = None
        stepped = False
        for call in ctx.body_calls(node):
            if backward is None and is_backward(call, ctx):
                backward = call
            elif is_optimizer_step(call):
                stepped = True
        if backward is None or not stepped:
            return
        if any(is_zero_grad(n) for n in ctx.followed_nodes(node)):
            return  # reset here, or in a same-file helper it calls (`reset_grad()`)
        if _per_context_gradients(node, backward, ctx):
            return
        self.report(backward, "Gradients are never reset in this loop: each step applies the sum of all past ones",
                    help="Call `optimizer.zero_grad()` every iteration (next to `step()` when accumulating)")

    visit_For = _check
    visit_AsyncFor = _check
    visit_While = _check
