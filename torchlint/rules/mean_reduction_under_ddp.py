"""TL501: reduction='mean' losses in code that wraps a model in DistributedDataParallel."""

from __future__ import annotations

import ast

from torchlint.analysis.torch_api import DDP, MEAN_REDUCTION_FUNCTIONS, MEAN_REDUCTION_LOSSES
from torchlint.checker import FileContext
from torchlint.rules.base import Rule, keyword, literal

_LEGACY_REDUCTION_ARGS = ("size_average", "reduce")


class MeanReductionUnderDdp(Rule):
    code = "TL501"
    name = "mean-reduction-under-ddp"
    summary = "reduction='mean' loss under DistributedDataParallel weights ranks wrongly when counts differ"
    severity = "warning"
    tags = ("correctness", "distributed", "loss")
    requires_text = ('DistributedDataParallel',)
    precision = "medium"

    def setup(self, ctx: FileContext) -> None:
        self.ddp_scopes: set[int] = set()
        self.candidates: list[tuple[int, ast.Call, str, bool]] = []  # scope, call, loss, explicit

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        name = ctx.call_name(node)
        if name is None or not name.startswith("torch.nn."):
            return
        if name == DDP:
            self.ddp_scopes.add(id(ctx.scope))
            return
        if ctx.grad_disabled():
            return  # no gradients flow from here: a metric, not a training loss
        short = name.rsplit(".", 1)[1]
        if name.startswith("torch.nn.functional."):
            if short not in MEAN_REDUCTION_FUNCTIONS:
                return
            display = f"F.{short}(...)"
        elif name == f"torch.nn.{short}" and short in MEAN_REDUCTION_LOSSES:
            display = f"nn.{short}()"
        else:
            return
        if any(kw.arg is None or kw.arg in _LEGACY_REDUCTION_ARGS for kw in node.keywords):
            return
        reduction = keyword(node, "reduction")
        if reduction is not None and literal(reduction.value) != "mean":
            return  # 'sum', 'none', or not statically known
        self.candidates.append((id(ctx.scope), node, display, reduction is not None))

    def end_file(self, ctx: FileContext) -> None:
        for scope, call, display, explicit in self.candidates:
            if scope not in self.ddp_scopes:
                continue
            how = "reduction='mean'" if explicit else "reduction='mean' (the default)"
            self.report(
                call,
                f"`{display}` uses {how} in code that wraps the model in DistributedDataParallel: "
                "each rank averages over its own elements and DDP then averages gradients across "
                "ranks, which equals the global mean only when every rank counts the same number of "
                "elements (ignore_index/padding, masks or an uneven last batch break this). Use "
                "reduction='sum' and divide by the global count from `dist.all_reduce`",
                params={"loss": display.split("(")[0], "explicit": explicit},
            )
