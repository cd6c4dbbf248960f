"""TL301: an RNG object stored on a Dataset is copied into every DataLoader worker."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Optional

from torchlint.analysis.dataloader import nonzero_workers
from torchlint.analysis.torch_api import DATALOADER, RNG_CONSTRUCTORS
from torchlint.checker import FileContext
from torchlint.records import RuntimeResult
from torchlint.rules.base import Evidence, Rule, arg_or_keyword, has_star_kwargs, keyword, literal
from torchlint.rules.data.identical_worker_random_streams import drawn, identical, worker_groups
import torchlint.runtime.judging as run


_SAMPLING_METHODS = ("__getitem__", "__getitems__", "__iter__")


def run_verdict(obs: run.Observation, path: str, rows: tuple[int, int], cwd: Path) -> RuntimeResult:
    """What the run shows: each worker's first draws from the dataset's RNG object."""
    groups = worker_groups(obs, lambda e: run.at(e["site"], path, rows))
    if not groups:
        return run.not_reached("no DataLoader worker started from this line")
    starts = sum(len(g) for g in groups)
    for group in groups:
        same = identical(group, "streams", drawn(obs, group))
        if same:
            name, draws = next(iter(same.items()))
            return run.verdict("confirmed", f"{len(group)} workers of this DataLoader drew identical first values "
                                            f"from {name}: {draws}", starts)
    group = max(groups, key=len)
    if len(group) < 2:
        return run.verdict("not-observed", f"{starts} worker start(s), never two workers of one DataLoader", starts)
    if not any(g[0]["streams"] for g in groups):
        return run.verdict("not-observed", f"{starts} worker start(s); the dataset ({group[0]['dataset']}) held no "
                                           "RNG object", starts)
    undrawn = identical(group, "streams", {f"streams:{n}" for n in group[0]["streams"]})
    if undrawn:
        return run.verdict("not-observed", f"{starts} worker start(s); workers held identical {', '.join(undrawn)}, "
                                           "but no worker drew from it while loading a batch", starts)
    name = next(iter(group[0]["streams"]))
    shown = "; ".join(f"worker {e['worker_id']}: {e['streams'].get(name)}" for e in group[:2])
    return run.verdict("not-observed", f"{starts} worker start(s); workers drew different values from {name} "
                                       f"({shown})", starts)


class WorkerRngDuplication(Rule):
    """## What it does
    Flags a `DataLoader(...)` with `num_workers` not literally 0 and no `worker_init_fn`, whose
    dataset is an instance of a class defined in the same file whose `__init__` stores an RNG
    **object** (`np.random.default_rng(...)`, `np.random.RandomState(...)`,
    `np.random.Generator(...)`, `random.Random(...)`, `torch.Generator()`) that `__getitem__`
    or `__iter__` uses.

    ## Why is this bad?
    Each worker process receives a copy of the dataset, RNG object included, in the same state.
    Every worker then draws the *same* random stream: augmentations repeat across workers, and
    effective data diversity drops by the number of workers, silently.

    Since torch 1.9 the DataLoader re-seeds the **global** `random`, `torch` and legacy
    `np.random` state in each worker, so datasets that use those are fine and are not flagged
    (older articles claim otherwise). Datasets that already look at
    `torch.utils.data.get_worker_info()`, or re-create the RNG per item, are not flagged either.

    ## Example
    ```python
    class Aug(Dataset):
        def __init__(self):
            self.rng = np.random.default_rng(0)
        def __getitem__(self, i):
            return self.rng.normal()

    loader = DataLoader(Aug(), num_workers=4)
    ```

    ## Use instead
    ```python
    def seed_worker(worker_id):
        info = torch.utils.data.get_worker_info()
        info.dataset.rng = np.random.default_rng(info.seed % 2**32)

    loader = DataLoader(Aug(), num_workers=4, worker_init_fn=seed_worker)
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [torch.utils.data: randomness in multi-process data loading](https://pytorch.org/docs/stable/data.html#randomness-in-multi-process-data-loading)
    - [Reproducibility: DataLoader](https://pytorch.org/docs/stable/notes/randomness.html#dataloader)
    """

    code = "TL301"
    name = "worker-rng-duplication"
    summary = "Dataset RNG object duplicated across DataLoader workers"
    severity = "warning"
    tags = ("correctness", "data-loading", "reproducibility")
    requires_text = ('DataLoader',)
    evidence = Evidence(probe="worker_rng", slice="call", judge="_judge_tl301", runtime=run_verdict)

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        if ctx.call_name(node) != DATALOADER:
            return
        workers = nonzero_workers(node)
        if workers is None:
            return
        init_fn = keyword(node, "worker_init_fn")
        if init_fn is not None and literal(init_fn.value) is not None:
            return
        if has_star_kwargs(node):
            return  # **kwargs may carry worker_init_fn
        dataset = arg_or_keyword(node, 0, "dataset")
        cls = self._dataset_class(dataset, node.lineno, ctx) if dataset is not None else None
        if cls is None:
            return
        found = self._stored_rng(cls, ctx)
        if found is None:
            return
        attr, kind = found
        self.report(node, f"Every worker gets a copy of `{cls.name}.{attr}` ({kind}): identical random streams",
                    help="Re-seed it per worker in a `worker_init_fn` (from `get_worker_info().seed`)",
                    params={"rng": kind, "num_workers": workers if isinstance(workers, int) else 2})

    def _dataset_class(self, dataset: ast.AST, lineno: int, ctx: FileContext) -> Optional[ast.ClassDef]:
        if isinstance(dataset, ast.Name):
            dataset = ctx.value_before(dataset, lineno, module_fallback=True)  # type: ignore[assignment]
        if isinstance(dataset, ast.Call) and isinstance(dataset.func, ast.Name):
            return ctx.module_class(dataset.func.id)
        return None

    def _stored_rng(self, cls: ast.ClassDef, ctx: FileContext) -> Optional[tuple[str, str]]:
        """(attribute, kind) of a generator `__init__` stores on self and a sampling method
        reads without replacing it; None when the class seeds per worker."""
        methods = {f.name: f for f in cls.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
        init = methods.get("__init__")
        if init is None or _asks_worker_info(cls):
            return None
        rngs = _rng_attributes(init, ctx)
        if not rngs:
            return None
        for method_name in _SAMPLING_METHODS:
            method = methods.get(method_name)
            shared = _read_not_replaced(method, rngs) if method is not None else []
            if shared:
                return shared[0], rngs[shared[0]]
        return None


def _asks_worker_info(cls: ast.ClassDef) -> bool:
    """A dataset that calls `get_worker_info` seeds per worker: it knows what it does."""
    return any((isinstance(node, ast.Attribute) and node.attr == "get_worker_info")
               or (isinstance(node, ast.Name) and node.id == "get_worker_info") for node in ast.walk(cls))


def _rng_attributes(init: ast.AST, ctx: FileContext) -> dict[str, str]:
    """`self.<attr> = <generator constructor>(...)` in `__init__`: attribute -> generator kind."""
    rngs: dict[str, str] = {}
    for node in ast.walk(init):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            kind = RNG_CONSTRUCTORS.get(ctx.call_name(node.value) or "")
            if kind is None:
                continue
            for t in node.targets:
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                    rngs[t.attr] = kind
    return rngs


def _read_not_replaced(method: ast.AST, rngs: dict[str, str]) -> list[str]:
    """The generators `method` reads through self and never assigns, sorted."""
    used: set[str] = set()
    reassigned: set[str] = set()
    for node in ast.walk(method):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id == "self" and node.attr in rngs:
            (reassigned if isinstance(node.ctx, ast.Store) else used).add(node.attr)
    return sorted(used - reassigned)
