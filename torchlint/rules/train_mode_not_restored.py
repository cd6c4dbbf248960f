"""TL704: a training loop that switches to eval() and never back to train()."""

from __future__ import annotations

import ast

from torchlint.analysis.loops import is_backward, method_name
from torchlint.checker import FileContext
from torchlint.rules.base import Rule, dotted, literal


def _is_train_call(call: ast.Call) -> bool:
    if method_name(call) != "train":
        return False
    return not call.args or literal(call.args[0]) is not False


class TrainModeNotRestored(Rule):
    code = "TL704"
    name = "train-mode-not-restored"
    summary = "Loop calls model.eval() but never model.train(): later epochs train in eval mode"
    severity = "warning"
    tags = ("correctness", "training-loop")
    requires_text = ('.eval(',)

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        if method_name(node) != "eval" or node.args or not ctx.loops:
            return
        for loop in reversed(ctx.loops):
            calls = ctx.body_calls(loop)
            if not any(is_backward(c, ctx) for c in calls):
                continue
            if any(_is_train_call(c) for c in calls):
                return
            self.report(node, f"`{dotted(node.func)}()` in a training loop that never calls `.train()`",
                        help="Call `model.train()` at the start of each epoch")
            return
