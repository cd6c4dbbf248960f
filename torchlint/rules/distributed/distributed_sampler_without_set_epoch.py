"""TL502: a shuffling DistributedSampler whose epoch is never set."""

from __future__ import annotations

import ast
from typing import Any, Optional

from torchlint.analysis.loops import method_name
from torchlint.analysis.scopes import assigned_names
from torchlint.analysis.torch_api import DATALOADER
from torchlint.analysis.dataloader import iterated
from torchlint.checker import FileContext
from torchlint.rules.base import Evidence, Rule, arg_or_keyword, keyword, literal

SAMPLER = "torch.utils.data.DistributedSampler"


# -- evidence (runs only in the --verify worker: see CONTRIBUTING.md) ----------------------
def probe_sampler_set_epoch(params: dict, device: str) -> tuple[str, str]:
    import torch

    data = list(range(16))
    per_epoch = params.get("seed_per_epoch") is True

    def sampler(epoch: int) -> Any:
        # Built once (seed 0), or, as the flagged code does, in the epoch loop with the epoch as its seed.
        return torch.utils.data.DistributedSampler(data, num_replicas=2, rank=0, shuffle=True,  # type: ignore[arg-type]
                                                   seed=epoch if per_epoch else 0)

    once = sampler(0)
    first, second = (list(sampler(e)) for e in (0, 1)) if per_epoch else (list(once), list(once))
    if first == second:
        fresh = sampler(0)
        fresh.set_epoch(1)
        return ("confirmed", f"epochs 0 and 1 without set_epoch both yield {first[:4]}... (rank 0 of 2); "
                             f"after set_epoch(1): {list(fresh)[:4]}...")
    return ("not-reproduced", f"the sampler is rebuilt each epoch with the epoch as its seed: epochs 0 and 1 yield "
                              f"{first[:4]}... and {second[:4]}... (rank 0 of 2) without set_epoch")


class DistributedSamplerWithoutSetEpoch(Rule):
    """## What it does
    Flags an epoch loop that iterates a `DataLoader` whose sampler is a `DistributedSampler` with
    shuffling on (the default), when nothing in the loop (or a function of the same file it
    calls) calls `.set_epoch(...)`. Reported at the epoch loop. Also flags `sampler.set_epoch(i)`
    inside the batch loop with that loop's own counter: the order then changes per batch index,
    the same way every epoch.

    ## Why is this bad?
    `DistributedSampler` seeds its shuffle with `seed + epoch`. Without `set_epoch(epoch)` the
    epoch stays 0, so every epoch visits the data in exactly the same order on every rank. Models
    still train, somewhat worse, and nothing reports it.

    ## Example
    ```python
    sampler = DistributedSampler(ds)
    loader = DataLoader(ds, sampler=sampler)
    for epoch in range(epochs):
        for batch in loader:
            ...
    ```

    ## Use instead
    ```python
    sampler = DistributedSampler(ds)
    loader = DataLoader(ds, sampler=sampler)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for batch in loader:
            ...
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [torch.utils.data.distributed.DistributedSampler](https://pytorch.org/docs/stable/data.html#torch.utils.data.distributed.DistributedSampler)
    """

    code = "TL502"
    name = "distributed-sampler-without-set-epoch"
    summary = "DistributedSampler.set_epoch() never called: every epoch has the same order"
    severity = "warning"
    tags = ("correctness", "distributed", "data-loading")
    requires_text = ('DistributedSampler',)
    evidence = Evidence(probe=probe_sampler_set_epoch)

    def _shuffling_sampler(self, node: Optional[ast.AST], lineno: int, ctx: FileContext) -> Optional[ast.Call]:
        if isinstance(node, ast.Name):
            node = ctx.value_before(node, lineno, module_fallback=True)
        if not isinstance(node, ast.Call) or ctx.call_name(node) != SAMPLER:
            return None
        shuffle = keyword(node, "shuffle")
        return node if shuffle is None or literal(shuffle.value) is True else None

    def _loader_sampler(self, it: ast.AST, lineno: int, ctx: FileContext) -> Optional[ast.Call]:
        """The shuffling DistributedSampler of the DataLoader `it`, if it has one."""
        if isinstance(it, ast.Name):
            it = ctx.value_before(it, lineno, module_fallback=True)  # type: ignore[assignment]
        if not isinstance(it, ast.Call) or ctx.call_name(it) != DATALOADER:
            return None
        return self._shuffling_sampler(arg_or_keyword(it, 3, "sampler"), it.lineno, ctx)

    def visit_For(self, node: ast.For, ctx: FileContext) -> None:
        it = iterated(node)
        sampler = self._loader_sampler(it, node.lineno, ctx) if it is not None else None
        if sampler is None:
            return
        self._check_set_epoch_argument(node, ctx)
        if not ctx.loops:
            return  # a single pass over the data: no epochs to reorder
        epoch_loop = ctx.loops[0]
        if any(method_name(c) == "set_epoch" for c in ctx.followed_calls(epoch_loop)):
            return  # called here, or in a same-file helper the epoch loop calls
        # A fact for --verify: a sampler built in the epoch loop from the loop's counter reorders anyway.
        inside = isinstance(epoch_loop, ast.stmt) and \
            epoch_loop.lineno <= sampler.lineno <= (epoch_loop.end_lineno or epoch_loop.lineno)
        seed = arg_or_keyword(sampler, 4, "seed") if inside else None
        counters = {n for n, _ in assigned_names(epoch_loop.target)} if isinstance(epoch_loop, ast.For) else set()
        seed_per_epoch = seed is not None and any(isinstance(n, ast.Name) and n.id in counters for n in ast.walk(seed))
        self.report(epoch_loop, "`DistributedSampler.set_epoch()` is never called: every epoch has the same order",
                    help="Call `sampler.set_epoch(epoch)` at the start of each epoch",
                    params={"seed_per_epoch": seed_per_epoch})

    def _check_set_epoch_argument(self, batch_loop: ast.For, ctx: FileContext) -> None:
        """`sampler.set_epoch(i)` inside the batch loop, with that loop's own counter."""
        counters = {n for n, _ in assigned_names(batch_loop.target)}
        for call in ctx.body_calls(batch_loop):
            if method_name(call) == "set_epoch" and call.args and isinstance(call.args[0], ast.Name) \
                    and call.args[0].id in counters:
                self.report(call, f"`set_epoch({call.args[0].id})` gets the batch loop's counter, not the epoch",
                            help="Call `sampler.set_epoch(epoch)` once per epoch, before the batch loop")
