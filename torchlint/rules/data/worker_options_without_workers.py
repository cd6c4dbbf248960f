"""TL306: `persistent_workers=True` or a `prefetch_factor` on a DataLoader without workers
(ValueError at construction)."""

from __future__ import annotations

import ast

from torchlint.analysis.torch_api import DATALOADER
from torchlint.checker import FileContext
from torchlint.rules.base import Evidence, Rule, Violation, arg_or_keyword, has_star_kwargs, keyword, literal


def probe_worker_options(params: dict, device: str) -> tuple[str, str]:
    """The --verify fact probe. It runs in the worker, which cannot import torchlint:
    scripts/generate_all.py copies this function into verify/evidence_data.py, so it uses
    only torch and what it imports itself."""
    from torch.utils.data import DataLoader

    option = params.get("option", "persistent_workers")
    given = {"persistent_workers": True} if option == "persistent_workers" else {"prefetch_factor": 2}
    try:
        DataLoader(list(range(4)), num_workers=0, **given)  # type: ignore[arg-type]  # a list is a dataset
    except ValueError as exc:
        return "confirmed", f"DataLoader(..., num_workers=0, {option}=...) raised ValueError: {str(exc).splitlines()[0]}"
    return "not-reproduced", f"this torch accepts {option} with num_workers=0"


def _keyword_literal(call: ast.Call, name: str) -> object:
    """The literal value of keyword `name`; None when absent, `...` when not a literal."""
    kw = keyword(call, name)
    return None if kw is None else literal(kw.value)


class WorkerOptionsNeedWorkers(Violation):
    options: tuple[str, ...]  # `persistent_workers`, `prefetch_factor`, as given
    help = "Use workers, or leave these options out when `num_workers` is 0"

    def message(self) -> str:
        what = " and ".join(f"`{g}`" for g in self.options)
        return f"`DataLoader` raises: {what} {'needs' if len(self.options) == 1 else 'need'} `num_workers > 0`"


class WorkerOptionsWithoutWorkers(Rule):
    """## What it does
    Flags `DataLoader(...)` calls that pass `persistent_workers=True` or a `prefetch_factor`
    (anything but `None`) while `num_workers` is `0`, given as the literal `0` or left at its
    default. A `num_workers` that is a variable or an expression, `persistent_workers` or
    `prefetch_factor` given as a variable, and calls with `*args` or `**kwargs` are not flagged:
    their values are not known before the run.

    ## Why is this bad?
    Both options configure worker processes, and without workers the DataLoader refuses them
    when it is built. Checked on torch 2.13: `ValueError: persistent_workers option needs
    num_workers > 0`, and `ValueError: prefetch_factor option could only be specified in
    multiprocessing.let num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor
    to None.` This typically happens when `num_workers` is set to 0 to debug, or on a machine
    without spare cores, and the other options are left in place: the program fails before the
    first batch.

    ## Example
    ```python
    loader = DataLoader(ds, batch_size=64, num_workers=0, persistent_workers=True, prefetch_factor=4)
    ```

    ## Use instead
    ```python
    workers = 0
    loader = DataLoader(ds, batch_size=64, num_workers=workers,
                        persistent_workers=workers > 0, prefetch_factor=4 if workers > 0 else None)
    ```

    ## Fix safety
    No automatic fix: whether to add workers or drop the options is the author's choice.

    ## References
    - [torch.utils.data.DataLoader](https://pytorch.org/docs/stable/data.html#torch.utils.data.DataLoader)
    """

    code = "TL306"
    name = "worker-options-without-workers"
    summary = "DataLoader with persistent_workers or prefetch_factor but num_workers=0 (ValueError)"
    severity = "error"
    tags = ("correctness", "data-loading")
    requires_text = ("persistent_workers", "prefetch_factor")
    precision = "very-high"
    evidence = Evidence(probe=probe_worker_options,
                        crash=r"persistent_workers option needs num_workers|prefetch_factor option could only be specified")

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        if ctx.call_name(node) != DATALOADER or has_star_kwargs(node):
            return
        if any(isinstance(a, ast.Starred) for a in node.args):
            return  # `DataLoader(*args, ...)` may pass num_workers positionally
        workers = arg_or_keyword(node, 5, "num_workers")  # DataLoader(dataset, ..., num_workers=0, ...)
        if workers is not None and literal(workers) != 0:
            return
        given = []
        persistent = _keyword_literal(node, "persistent_workers")  # keyword-only, like prefetch_factor
        if persistent is not ... and persistent:
            given.append("persistent_workers")
        if _keyword_literal(node, "prefetch_factor") not in (..., None):
            given.append("prefetch_factor")
        if given:
            self.report(node, WorkerOptionsNeedWorkers(options=tuple(given)),
                        params={"option": given[0]})
