"""TL303: a multi-worker DataLoader constructed inside a loop."""

from __future__ import annotations

import ast

from torchlint.analysis.scopes import assigned_names, iter_scope
from torchlint.analysis.torch_api import DATALOADER
from torchlint.analysis.dataloader import nonzero_workers
from torchlint.checker import FileContext
from torchlint.rules.base import Evidence, Rule, Violation, keyword, literal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional, Sequence


# -- evidence (runs only in the --verify worker: see CONTRIBUTING.md) ----------------------
def probe_dataloader_in_loop(params: dict, device: str) -> tuple[str, str]:
    import multiprocessing
    import sys

    import torch

    code_workers: Any = params.get("num_workers")
    workers = min(code_workers, 2) if type(code_workers) is int and code_workers > 0 else 2
    shown = f"num_workers={workers}" + (f" (the code's {code_workers}, capped)" if code_workers != workers and
                                        type(code_workers) is int else "")
    iterations: Any = params.get("iterations")
    known = type(iterations) is int and iterations >= 0
    rounds = min(iterations, 3) if known else 3
    counter = multiprocessing.get_context("fork").Value("i", 0) if sys.platform.startswith("linux") else None
    if counter is None:
        return "skipped", "counting worker starts needs the fork start method"

    def init(_: int) -> None:
        with counter.get_lock():
            counter.value += 1

    data = list(range(8))
    for _ in range(rounds):
        for _ in torch.utils.data.DataLoader(data, num_workers=workers, worker_init_fn=init,  # type: ignore[arg-type]  # noqa: TL303 - the hazard, on purpose
                                             multiprocessing_context="fork"):
            pass
    in_loop = counter.value
    counter.value = 0
    loader: Any = torch.utils.data.DataLoader(data, num_workers=workers, worker_init_fn=init,  # type: ignore[arg-type]
                                              persistent_workers=True, multiprocessing_context="fork")
    for _ in range(rounds):
        for _ in loader:
            pass
    once = counter.value
    del loader
    runs = "the loop's iterations (how many is not known here)"
    if known:
        runs = {0: "the loop, which runs 0 times,", 1: "the loop's single iteration"}.get(
            iterations, f"the loop's {iterations} iterations")
    if in_loop > once:
        return ("confirmed", f"{rounds} of {runs} with {shown} started {in_loop} worker processes; "
                             f"one persistent loader built before the loop started {once}")
    return ("not-reproduced", f"{runs} with {shown} started {in_loop} worker processes, no more than one loader "
                              f"built before the loop ({once}): a loop that runs once restarts nothing")


class DataloaderBuiltEveryIteration(Violation):
    num_workers: object  # the literal, or the expression's text
    persistent: bool  # `persistent_workers=True`, defeated
    help = "Build it once before the loop"

    def message(self) -> str:
        extra = " (defeating persistent_workers)" if self.persistent else ""
        return f"`DataLoader(num_workers={self.num_workers})` in a loop restarts its workers every iteration{extra}"


class DataloaderInLoop(Rule):
    """## What it does
    Flags a `DataLoader` with `num_workers` not literally 0 constructed inside a loop body from
    arguments that do not change in the loop. Loaders built from the loop variable (k-fold
    splits, curriculum stages), from a name the loop body changes anywhere (a batch size doubled
    after the construction), or rebuilt under an `if` (on a schedule) are not flagged.

    ## Why is this bad?
    Worker processes are started when the loader is iterated and shut down with it. Re-creating
    the loader every epoch pays the worker start-up (process spawn, dataset pickling, imports)
    every epoch, and defeats `persistent_workers=True`, whose whole purpose is to keep workers
    alive across epochs.

    ## Example
    ```python
    for epoch in range(epochs):
        loader = DataLoader(ds, num_workers=8, persistent_workers=True)
        for batch in loader:
            ...
    ```

    ## Use instead
    ```python
    loader = DataLoader(ds, num_workers=8, persistent_workers=True)
    for epoch in range(epochs):
        for batch in loader:
            ...
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [torch.utils.data](https://pytorch.org/docs/stable/data.html)
    """

    code = "TL303"
    name = "dataloader-in-loop"
    summary = "Multi-worker DataLoader re-created on every loop iteration"
    severity = "warning"
    tags = ("performance", "data-loading")
    requires_text = ('DataLoader',)
    evidence = Evidence(probe=probe_dataloader_in_loop)

    def setup(self, ctx: FileContext) -> None:
        self._varying: dict[int, set[str]] = {}

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        if not ctx.loops or ctx.call_name(node) != DATALOADER:
            return
        workers = nonzero_workers(node)
        if workers is None:
            return
        loop = ctx.loops[-1]
        # A loader built from what the loop changes (k-fold splits, curriculum stages) has
        # to be rebuilt; one built from loop-invariant arguments does not.
        varying = self._varying.get(id(loop))
        if varying is None:  # per loop, not per DataLoader built in it
            varying = self._varying[id(loop)] = _assigned_in(loop)
        used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        if used & varying:
            return
        if ctx.branches_since(loop):
            return  # rebuilt on a schedule (`if epoch % k == 0:`), not every iteration
        persistent = keyword(node, "persistent_workers")
        persistent_on = persistent is not None and literal(persistent.value) is True
        self.report(node, DataloaderBuiltEveryIteration(num_workers=workers, persistent=persistent_on),
                    params={"num_workers": workers if type(workers) is int else None,
                            "iterations": _literal_iterations(ctx.loops)})


def _assigned_in(loop: ast.AST) -> set[str]:
    """Names the loop changes: its target, and what its body assigns."""
    varying: set[str] = set()
    if isinstance(loop, (ast.For, ast.AsyncFor)):
        varying.update(n for n, _ in assigned_names(loop.target))
    for n in iter_scope(loop.body):  # type: ignore[attr-defined]
        # Anywhere in the body: a value changed after the construction is seen next time round.
        if isinstance(n, ast.Assign):
            for t in n.targets:
                varying.update(name for name, _ in assigned_names(t))
        elif isinstance(n, (ast.AugAssign, ast.AnnAssign)) and isinstance(n.target, ast.Name):
            varying.add(n.target.id)
    return varying


def _literal_iterations(loops: Sequence[ast.AST]) -> Optional[int]:
    """How many times the innermost body runs, when every enclosing loop is `for ... in range(<literals>)`
    or `for ... in [a, b, ...]`; None if unknown."""
    total = 1
    for loop in loops:
        count = _loop_count(loop)
        if count is None:
            return None
        total *= count
    return total


def _loop_count(loop: ast.AST) -> Optional[int]:
    it = loop.iter if isinstance(loop, (ast.For, ast.AsyncFor)) else None
    if isinstance(it, (ast.List, ast.Tuple)) and not any(isinstance(e, ast.Starred) for e in it.elts):
        return len(it.elts)
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range" \
            and 1 <= len(it.args) <= 3 and not it.keywords:
        bounds = [literal(a) for a in it.args]
        if all(type(b) is int for b in bounds) and (len(bounds) < 3 or bounds[2] != 0):
            try:
                return min(len(range(*bounds)), 2**20)
            except OverflowError:
                return None
    return None
