"""TL107: a loss added to an accumulator inside the training loop keeps every graph alive."""

from __future__ import annotations

import ast
from typing import Optional

from torchlint.analysis.loops import is_backward
from torchlint.analysis.scopes import iter_scope
from torchlint.checker import FileContext
from torchlint.rules.base import Rule, dotted

_DETACHING = frozenset({"item", "detach", "tolist", "cpu", "numpy"})


def _is_detached(value: ast.AST) -> bool:
    if isinstance(value, ast.Call):
        if isinstance(value.func, ast.Attribute) and value.func.attr in _DETACHING:
            return True
        if isinstance(value.func, ast.Name) and value.func.id in ("float", "int"):
            return True
    return False


class LossAccumulatedWithGraph(Rule):
    code = "TL107"
    name = "loss-accumulated-with-graph"
    summary = "Loss summed into an accumulator without .item()/.detach() keeps every graph alive"
    severity = "warning"
    tags = ("performance", "memory", "training-loop")
    requires_text = ('backward',)

    def _check(self, loop: ast.AST, ctx: FileContext) -> None:
        body = loop.body  # type: ignore[attr-defined]
        losses: set[str] = set()
        for call in ctx.body_calls(loop):
            if is_backward(call, ctx) and isinstance(call.func, ast.Attribute) \
                    and isinstance(call.func.value, ast.Name):
                losses.add(call.func.value.id)
        if not losses:
            return
        # A name that is also re-bound to a detached value in the loop is not a graph.
        for node in iter_scope(body):
            if isinstance(node, ast.Assign) and _is_detached(node.value):
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        losses.discard(t.id)
        reset = {dotted(t) for node in iter_scope(body) if isinstance(node, ast.Assign)
                 and not self._accumulation(node, losses) for t in node.targets}
        for node in iter_scope(body):
            found = self._accumulation(node, losses)
            if found is None:
                continue
            acc, loss = found
            if acc in losses:
                continue  # the accumulator itself is backpropagated: keeping its graph is the point
            if acc in reset:
                continue  # re-assigned in the loop (reset after each step): the graph lives one step
            self.report(node, f"`{acc}` accumulates `{loss}` with its graph: memory grows every step",
                        help=f"Accumulate `{loss}.item()` (or `{loss}.detach()`)")

    @staticmethod
    def _accumulation(node: ast.AST, losses: set[str]) -> Optional[tuple[str, str]]:
        if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add):
            target, value = node.target, node.value
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.value, ast.BinOp) \
                and isinstance(node.value.op, ast.Add) and isinstance(node.targets[0], (ast.Name, ast.Attribute)) \
                and dotted(node.value.left) == dotted(node.targets[0]):
            target, value = node.targets[0], node.value.right
        else:
            return None
        if not isinstance(target, (ast.Name, ast.Attribute)):
            return None
        if isinstance(value, ast.BinOp) and isinstance(value.op, (ast.Mult, ast.Div)):
            value = value.left if isinstance(value.left, ast.Name) else value.right
        if isinstance(value, ast.Name) and value.id in losses:
            return dotted(target), value.id
        return None

    visit_For = _check
    visit_AsyncFor = _check
    visit_While = _check
