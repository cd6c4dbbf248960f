"""TL103: a training loop that never resets gradients."""

from __future__ import annotations

import ast

from torchlint.analysis.loops import is_backward, is_optimizer_step, is_zero_grad
from torchlint.checker import FileContext
from torchlint.rules.base import Rule


def _per_context_gradients(loop: ast.AST, backward: ast.Call, ctx: FileContext) -> bool:
    """Distributed autograd accumulates into a fresh context per `with dist_autograd.context()`."""
    name = ctx.call_name(backward) or ""
    if name.startswith("torch.distributed.autograd."):
        return True

    def distributed_context(node: ast.AST) -> bool:
        return isinstance(node, (ast.With, ast.AsyncWith)) and any(
            (ctx.call_name(item.context_expr) or "").startswith("torch.distributed.autograd.") for item in node.items)

    body = loop.body  # type: ignore[attr-defined]
    return ctx.body_has("dist-autograd-context", body, distributed_context) \
        or ctx.any_ancestor("dist-autograd-context", distributed_context)


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
        if ctx.followed_has("zero-grad", node, is_zero_grad):
            return  # reset here, or in a same-file helper it calls (`reset_grad()`)
        if _per_context_gradients(node, backward, ctx):
            return
        self.report(backward, "Gradients are never reset in this loop: each step applies the sum of all past ones",
                    help="Call `optimizer.zero_grad()` every iteration (next to `step()` when accumulating)")

    visit_For = _check
    visit_AsyncFor = _check
    visit_While = _check
