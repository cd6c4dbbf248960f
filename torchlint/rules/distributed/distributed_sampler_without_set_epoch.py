"""TL502: a shuffling DistributedSampler whose epoch is never set."""

from __future__ import annotations

import ast

from torchlint.analysis.astutil import bound_arguments
from torchlint.analysis.loops import method_name
from torchlint.analysis.scopes import assigned_names, iter_scope
from torchlint.analysis.torch_api import DATALOADER
from torchlint.analysis.dataloader import iterated
from torchlint.checker import FileContext
from torchlint.rules.base import Evidence, Rule, Violation, arg_or_keyword, keyword, literal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Optional

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


class SetEpochNeverCalled(Violation):
    help = "Call `sampler.set_epoch(epoch)` at the start of each epoch"

    def message(self) -> str:
        return "`DistributedSampler.set_epoch()` is never called: every epoch has the same order"


class SetEpochOfBatchCounter(Violation):
    counter: str
    help = "Call `sampler.set_epoch(epoch)` once per epoch, before the batch loop"

    def message(self) -> str:
        return f"`set_epoch({self.counter})` gets the batch loop's counter, not the epoch"


class DistributedSamplerWithoutSetEpoch(Rule):
    """## What it does
    Flags an epoch loop that iterates a `DataLoader` whose sampler is a `DistributedSampler` with
    shuffling on (the default), when nothing in the loop (or a function of the project it calls,
    in this file or another) calls `.set_epoch(...)`. Reported at the epoch loop. The loader may
    be built here, returned by a helper of the project (`loader = build_loader(ds)`), or be a
    module-level object of another file (`from data import train_loader`); and the epoch loop
    may iterate it itself or through a helper it passes it to (`train_one_epoch(model, loader)`
    in `engine.py`, whose body loops over its `loader` parameter). Also flags `sampler.set_epoch(i)`
    inside the batch loop with that loop's own counter: the order then changes per batch index,
    the same way every epoch.

    ## Why is this bad?
    `DistributedSampler` seeds its shuffle with `seed + epoch`. Without `set_epoch(epoch)` the
    epoch stays 0, so every epoch visits the data in exactly the same order on every rank. Models
    still train, somewhat worse, and nothing reports it.

    ## Example
    ```python
    from torch.utils.data.distributed import DistributedSampler

    sampler = DistributedSampler(ds)
    loader = DataLoader(ds, sampler=sampler)
    for epoch in range(epochs):
        for batch in loader:
            ...
    ```

    ## Use instead
    ```python
    from torch.utils.data.distributed import DistributedSampler

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
    # The sampler may be built by a helper in another file (`loader = build_loader(ds)`).
    requires_text = ('DistributedSampler', 'loader', 'Loader')
    evidence = Evidence(probe=probe_sampler_set_epoch)

    def _loader_sampler(self, it: ast.AST, lineno: int, ctx: FileContext) -> Optional[tuple[ast.Call, bool]]:
        """The shuffling DistributedSampler of the DataLoader `it`, if it has one, and whether
        it is built in this file: here, by a helper of the project that returns the loader
        (`loader = build_loader(ds)`), or as a module-level object another file defines."""
        if isinstance(it, ast.Name):
            value = ctx.value_before(it, lineno, module_fallback=True)
            if value is None:
                return _imported_loader_sampler(it, ctx)
            it = value
        if not isinstance(it, ast.Call):
            return None
        if ctx.call_name(it) == DATALOADER:
            def value_here(name: ast.Name) -> Optional[ast.AST]:
                return ctx.value_before(name, it.lineno, module_fallback=True)

            sampler = _shuffling_sampler(it, ctx.call_name, value_here)
            return (sampler, True) if sampler is not None else None
        found = ctx.returned_value(it)
        if found is None:
            return None
        module, fn, value = found
        call_name = module.call_name if module is not None else ctx.module_scope.imports.call_name

        def value_in_helper(name: ast.Name) -> Optional[ast.AST]:
            return ctx.sole_value(name.id, fn)

        if isinstance(value, ast.Name):
            value = value_in_helper(value)  # type: ignore[assignment]
        sampler = _shuffling_sampler(value, call_name, value_in_helper) if isinstance(value, ast.Call) else None
        return (sampler, False) if sampler is not None else None

    def visit_For(self, node: ast.For, ctx: FileContext) -> None:
        it = iterated(node)
        found = self._loader_sampler(it, node.lineno, ctx) if it is not None else None
        if found is None:
            return
        self._check_set_epoch_argument(node, ctx)
        if ctx.loops:  # else a single pass over the data: no epochs to reorder
            self._check_epoch_loop(ctx.loops[0], *found, ctx)

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        """`train_one_epoch(model, loader)` in a loop, where the helper (of this file or
        another) iterates the loader it is given."""
        if not ctx.loops or not node.args and not node.keywords:
            return
        fn = ctx.called_function(node)
        if fn is None:
            return
        for param, arg in bound_arguments(fn, node):
            if isinstance(arg, ast.Name) and param in _iterated_parameters(fn, ctx):
                found = self._loader_sampler(arg, node.lineno, ctx)
                if found is not None:
                    self._check_epoch_loop(ctx.loops[0], *found, ctx)
                    return

    def _check_epoch_loop(self, epoch_loop: ast.AST, sampler: ast.Call, here: bool, ctx: FileContext) -> None:
        if any(method_name(c) == "set_epoch" for c in ctx.followed_calls(epoch_loop)):
            return  # called here, or in a helper of the project the epoch loop calls
        # A fact for --verify: a sampler built in the epoch loop from the loop's counter reorders anyway.
        inside = here and isinstance(epoch_loop, ast.stmt) and \
            epoch_loop.lineno <= sampler.lineno <= (epoch_loop.end_lineno or epoch_loop.lineno)
        seed = arg_or_keyword(sampler, 4, "seed") if inside else None
        counters = {n for n, _ in assigned_names(epoch_loop.target)} if isinstance(epoch_loop, ast.For) else set()
        seed_per_epoch = seed is not None and any(isinstance(n, ast.Name) and n.id in counters for n in ast.walk(seed))
        self.report(epoch_loop, SetEpochNeverCalled(),
                    params={"seed_per_epoch": seed_per_epoch})

    def _check_set_epoch_argument(self, batch_loop: ast.For, ctx: FileContext) -> None:
        """`sampler.set_epoch(i)` inside the batch loop, with that loop's own counter."""
        counters = {n for n, _ in assigned_names(batch_loop.target)}
        for call in ctx.body_calls(batch_loop):
            if method_name(call) == "set_epoch" and call.args and isinstance(call.args[0], ast.Name) \
                    and call.args[0].id in counters:
                self.report(call, SetEpochOfBatchCounter(counter=call.args[0].id))


def _shuffling_sampler(loader: ast.Call, call_name: Callable[[ast.AST], Optional[str]],
                       value_of: Callable[[ast.Name], Optional[ast.AST]]) -> Optional[ast.Call]:
    """The DataLoader call's sampler when it is a DistributedSampler with shuffling on (names
    resolved by `call_name` and `value_of`, where the loader is built)."""
    if call_name(loader) != DATALOADER:
        return None
    node = arg_or_keyword(loader, 3, "sampler")
    if isinstance(node, ast.Name):
        node = value_of(node)
    if not isinstance(node, ast.Call) or call_name(node) != SAMPLER:
        return None
    shuffle = keyword(node, "shuffle")
    return node if shuffle is None or literal(shuffle.value) is True else None


def _imported_loader_sampler(name: ast.Name, ctx: FileContext) -> Optional[tuple[ast.Call, bool]]:
    """`from data import train_loader`: the module-level DataLoader of another project file."""
    qn = ctx.project_qualname(name) if ctx.index is not None else None
    found = ctx.index.definition(qn) if qn is not None and ctx.index is not None else None
    if found is None or not isinstance(found[1], ast.Call):
        return None
    module = found[0]

    def module_value(node: ast.Name) -> Optional[ast.AST]:
        return module.values.get(node.id)

    sampler = _shuffling_sampler(found[1], module.call_name, module_value)
    return (sampler, False) if sampler is not None else None


def _iterated_parameters(fn: ast.FunctionDef | ast.AsyncFunctionDef, ctx: FileContext) -> frozenset[str]:
    """The names `fn` loops over (`for batch in loader`, `enumerate(loader)`), found once per
    function: every call of it asks."""
    key = ("iterated-names", id(fn))
    found = ctx.memo.get(key)
    if found is None:
        found = ctx.memo[key] = frozenset(
            it.id for it in (iterated(n) for n in iter_scope(fn.body) if isinstance(n, (ast.For, ast.AsyncFor)))
            if isinstance(it, ast.Name))
    return found  # type: ignore[return-value]
