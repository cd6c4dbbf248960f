"""TL802 (off by default): host-device syncs on every training step."""

from __future__ import annotations

import ast

from torchlint.analysis import inference
from torchlint.analysis.loops import calls_in, is_backward
from torchlint.checker import FileContext
from torchlint.rules.base import Rule, dotted

_SYNCING = frozenset({"item", "cpu", "numpy", "tolist"})


class SyncInTrainingLoop(Rule):
    code = "TL802"
    name = "sync-in-training-loop"
    summary = ".item()/.cpu()/.numpy()/print(tensor) every training step forces a device sync"
    severity = "info"
    default_enabled = False
    tags = ("performance", "training-loop")
    precision = "medium"

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        if not ctx.loops:
            return
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in _SYNCING and not node.args:
            what = f"`{dotted(node)}`"
        elif isinstance(func, ast.Name) and func.id == "print" and any(
                inference.kind_of(a, ctx) in (inference.TENSOR, inference.PARAMETER) for a in node.args):
            what = "`print(<tensor>)`"
        else:
            return
        loop = ctx.loops[-1]
        # Inside an `if step % k == 0:` the sync is already rate-limited.
        if any(isinstance(p, ast.If) for p in ctx.parents[ctx.parents.index(loop) + 1:] if loop in ctx.parents):
            return
        if not any(is_backward(c, ctx) for c in calls_in(loop.body)):  # type: ignore[attr-defined]
            return
        self.report(node, f"{what} on every training step waits for the GPU to finish (a device "
                          "synchronisation), stalling the pipeline. Accumulate on the device and sync "
                          "every N steps")
