"""TL502: a shuffling DistributedSampler whose epoch is never set."""

from __future__ import annotations

import ast
from typing import Optional

from torchlint.analysis.loops import method_name
from torchlint.analysis.torch_api import DATALOADER
from torchlint.analysis.dataloader import iterated
from torchlint.checker import FileContext
from torchlint.rules.base import Rule, arg_or_keyword, keyword, literal

SAMPLER = "torch.utils.data.DistributedSampler"


class DistributedSamplerWithoutSetEpoch(Rule):
    code = "TL502"
    name = "distributed-sampler-without-set-epoch"
    summary = "DistributedSampler.set_epoch() never called: every epoch has the same order"
    severity = "warning"
    tags = ("correctness", "distributed", "data-loading")
    requires_text = ('DistributedSampler',)

    def _shuffling_sampler(self, node: Optional[ast.AST], lineno: int, ctx: FileContext) -> bool:
        if isinstance(node, ast.Name):
            node = ctx.value_before(node, lineno, module_fallback=True)
        if not isinstance(node, ast.Call) or ctx.call_name(node) != SAMPLER:
            return False
        shuffle = keyword(node, "shuffle")
        return shuffle is None or literal(shuffle.value) is True

    def _loader_with_sampler(self, it: ast.AST, lineno: int, ctx: FileContext) -> bool:
        if isinstance(it, ast.Name):
            it = ctx.value_before(it, lineno, module_fallback=True)  # type: ignore[assignment]
        if not isinstance(it, ast.Call) or ctx.call_name(it) != DATALOADER:
            return False
        return self._shuffling_sampler(arg_or_keyword(it, 3, "sampler"), it.lineno, ctx)

    def visit_For(self, node: ast.For, ctx: FileContext) -> None:
        if not ctx.loops:
            return
        it = iterated(node)
        if it is None or not self._loader_with_sampler(it, node.lineno, ctx):
            return
        epoch_loop = ctx.loops[0]
        if any(method_name(c) == "set_epoch" for c in ctx.body_calls(epoch_loop)):
            return
        self.report(epoch_loop, "`DistributedSampler.set_epoch()` is never called: every epoch has the same order",
                    help="Call `sampler.set_epoch(epoch)` at the start of each epoch")
