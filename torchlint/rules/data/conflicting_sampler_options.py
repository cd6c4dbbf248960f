"""TL304: DataLoader options that are mutually exclusive (ValueError at construction)."""

from __future__ import annotations

import ast

from torchlint.analysis.torch_api import DATALOADER
from torchlint.checker import FileContext
from torchlint.rules.base import Evidence, Rule, Violation, arg_or_keyword, literal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional


# -- evidence (runs only in the --verify worker: see CONTRIBUTING.md) ----------------------
def probe_conflicting_sampler(params: dict, device: str) -> tuple[str, str]:
    import torch
    from _evidence import first_line, raises

    data = list(range(8))
    sampler = torch.utils.data.RandomSampler(data)
    if params.get("conflict") == "batch_sampler":
        bs = torch.utils.data.BatchSampler(sampler, 2, False)
        exc = raises(lambda: torch.utils.data.DataLoader(data, batch_size=4, batch_sampler=bs))  # type: ignore[arg-type]  # noqa: TL304 - the hazard, on purpose
    else:
        exc = raises(lambda: torch.utils.data.DataLoader(data, shuffle=True, sampler=sampler))  # type: ignore[arg-type]  # noqa: TL304 - the hazard, on purpose
    if isinstance(exc, ValueError):
        return "confirmed", first_line(exc)
    return "not-reproduced", f"no error ({exc!r})"


def judge_conflicting_sampler(facts: dict, runs: list) -> Optional[tuple[str, str]]:
    from _evidence import expect_raise, says

    return expect_raise(runs, says("sampler", "mutually exclusive"), "the DataLoader call",
                        lambda rec: "the DataLoader accepted these options")


class BatchSamplerConflict(Violation):
    conflicts: tuple[str, ...]  # the options that conflict with `batch_sampler`, `shuffle=True`
    help = "Configure batching in the batch sampler only"

    def message(self) -> str:
        return f"`DataLoader` raises: `batch_sampler` with {', '.join(f'`{c}`' for c in self.conflicts)}"


class ShuffleWithSampler(Violation):
    help = "Shuffle in the sampler and drop `shuffle`"

    def message(self) -> str:
        return "`DataLoader` raises: `shuffle=True` together with `sampler=`"


class ConflictingSamplerOptions(Rule):
    """## What it does
    Flags `DataLoader(...)` calls that combine `shuffle=True` with `sampler=`, or `batch_sampler=`
    with `batch_size` (other than 1), `shuffle=True`, `sampler=` or `drop_last=True`. A conditional
    argument (`sampler=s if batch_sampler is None else None`) is not a conflict.

    ## Why is this bad?
    These options are mutually exclusive and torch raises when the loader is built:
    `ValueError: sampler option is mutually exclusive with shuffle` and
    `ValueError: batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and
    drop_last`. Often this sits on a code path (distributed training) that local runs never take.

    ## Example
    ```python
    loader = DataLoader(ds, shuffle=True, sampler=DistributedSampler(ds))
    ```

    ## Use instead
    ```python
    loader = DataLoader(ds, sampler=DistributedSampler(ds, shuffle=True))
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [torch.utils.data](https://pytorch.org/docs/stable/data.html)
    """

    code = "TL304"
    name = "conflicting-sampler-options"
    summary = "DataLoader sampler/batch_sampler options that raise ValueError"
    severity = "error"
    tags = ("correctness", "data-loading")
    requires_text = ('DataLoader',)
    precision = "very-high"
    evidence = Evidence(probe=probe_conflicting_sampler, slice="call", judge=judge_conflicting_sampler,
                        crash=r"mutually exclusive")

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        if ctx.call_name(node) != DATALOADER:
            return
        # DataLoader(dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, ...)
        batch_size = arg_or_keyword(node, 1, "batch_size")
        shuffle = arg_or_keyword(node, 2, "shuffle")
        sampler = arg_or_keyword(node, 3, "sampler")
        batch_sampler = arg_or_keyword(node, 4, "batch_sampler")
        drop_last = arg_or_keyword(node, 9, "drop_last")
        # `sampler=s if batch_sampler is None else None` may be None: not known to be given.
        given = lambda n: n is not None and not isinstance(n, ast.IfExp) and literal(n) is not None  # noqa: E731
        if given(batch_sampler):
            conflicts = []
            if batch_size is not None and literal(batch_size) != 1:
                conflicts.append("batch_size")
            if shuffle is not None and literal(shuffle) is True:
                conflicts.append("shuffle=True")
            if given(sampler):
                conflicts.append("sampler")
            if drop_last is not None and literal(drop_last) is True:
                conflicts.append("drop_last=True")
            if conflicts:
                self.report(node, BatchSamplerConflict(conflicts=tuple(conflicts)), params={"conflict": "batch_sampler"})
                return
        if given(sampler) and shuffle is not None and literal(shuffle) is True:
            self.report(node, ShuffleWithSampler(), params={"conflict": "sampler"})
