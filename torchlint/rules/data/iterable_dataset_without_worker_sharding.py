"""TL307: an IterableDataset that ignores `get_worker_info()`, loaded with several workers."""

from __future__ import annotations

import ast

from torchlint.analysis.torch_api import DATALOADER
from torchlint.checker import FileContext
from torchlint.rules.base import Evidence, Rule, Violation, arg_or_keyword, has_star_kwargs, keyword, literal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional


def probe_iterable_sharding(params: dict, device: str) -> tuple[str, str]:
    """Iterate an IterableDataset over range(6) with the finding's worker count; with facts
    `sharded` the dataset splits its range by `get_worker_info()`."""
    import sys

    import torch
    from torch.utils.data import DataLoader, IterableDataset, get_worker_info

    if not sys.platform.startswith("linux"):
        return "skipped", "the probe defines its dataset in place, which needs fork workers (Linux)"
    workers = int(params.get("num_workers", 2))
    sharded = bool(params.get("sharded", False))

    class Numbers(IterableDataset):
        def __iter__(self):  # type: ignore[no-untyped-def]
            info = get_worker_info() if sharded else None
            start, step = (info.id, info.num_workers) if info is not None else (0, 1)
            return iter(range(start, 6, step))

    seen = [int(x) for x in DataLoader(Numbers(), batch_size=None, num_workers=workers,
                                       multiprocessing_context="fork" if workers else None)]
    if len(seen) > len(set(seen)):
        return "confirmed", (f"torch {torch.__version__}: {workers} workers over range(6) gave {len(seen)} samples, "
                             f"{len(seen) - len(set(seen))} of them duplicates: {sorted(seen)}")
    return "not-reproduced", f"{workers} worker(s) gave each of the {len(seen)} samples once"


_ITERABLE = frozenset({"torch.utils.data.IterableDataset", "torch.utils.data.dataset.IterableDataset"})
# Names whose mention means the class splits its stream per worker (or per rank, which some
# code combines with the worker split).
_SHARDING = frozenset({"get_worker_info", "worker_info", "worker_id", "num_workers", "split_dataset_by_node"})
# Random generation: each worker is seeded differently, so a generated stream is no duplicate.
_GENERATORS = frozenset({"randn", "rand", "randint", "random", "normal", "uniform", "choice", "choices",
                         "sample", "multinomial", "bernoulli", "poisson", "integers", "standard_normal"})
_CPU_COUNTS = frozenset({"os.cpu_count", "multiprocessing.cpu_count"})


def _identifiers(node: ast.AST) -> set[str]:
    found = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            found.add(n.id)
        elif isinstance(n, ast.Attribute):
            found.add(n.attr)
        elif isinstance(n, ast.arg):
            found.add(n.arg)
    return found


class UnshardedIterableDataset(Violation):
    dataset: str  # the class
    workers: str  # their count, or "the" (one per CPU)
    help = "Split the stream in `__iter__` by `get_worker_info()` (id, num_workers)"

    def message(self) -> str:
        return f"`{self.dataset}` ignores `get_worker_info()`: {self.workers} workers each yield every sample"


class IterableDatasetWithoutWorkerSharding(Rule):
    """## What it does
    Flags `DataLoader(ds, num_workers=N)` with `N > 1` (a literal, a name bound to one, or
    `os.cpu_count()`, which is more than 1 on any machine with spare cores) when `ds` is an instance of an `IterableDataset` subclass of the same file
    whose class never mentions `get_worker_info` (nor `worker_info`, `worker_id`, `num_workers`,
    `split_dataset_by_node`) and whose `__iter__` walks a source (a `for` loop, `yield from`,
    `iter(...)`). Not flagged: a `worker_init_fn=` on the loader (it may split the stream),
    `**kwargs`, a worker count from a variable or an expression, a class that inherits its
    `__iter__`, and an `__iter__` that generates random samples (`torch.randn`,
    `random.random`, ...): workers are seeded differently, so those streams do not repeat.

    ## Why is this bad?
    With `num_workers=N`, the DataLoader gives every worker a copy of the dataset and interleaves
    what they yield. An `IterableDataset` is not split for the workers: each copy runs the whole
    `__iter__`, so every sample arrives N times per epoch. Checked on torch 2.13: an
    `IterableDataset` over `range(6)` with 2 workers yields 12 samples, each twice. Epochs are N
    times longer, batches hold repeats, and validation metrics count each sample N times.

    ## Example
    ```python
    from torch.utils.data import IterableDataset

    class Lines(IterableDataset):
        def __init__(self, path):
            self.path = path

        def __iter__(self):
            with open(self.path) as f:
                yield from f

    loader = DataLoader(Lines("data.txt"), batch_size=32, num_workers=4)
    ```

    ## Use instead
    ```python
    import itertools
    from torch.utils.data import IterableDataset

    class Lines(IterableDataset):
        def __init__(self, path):
            self.path = path

        def __iter__(self):
            info = torch.utils.data.get_worker_info()
            start, step = (info.id, info.num_workers) if info else (0, 1)
            with open(self.path) as f:
                yield from itertools.islice(f, start, None, step)

    loader = DataLoader(Lines("data.txt"), batch_size=32, num_workers=4)
    ```

    ## Fix safety
    No automatic fix: how to split the stream depends on the source.

    ## References
    - [torch.utils.data.IterableDataset](https://pytorch.org/docs/stable/data.html#torch.utils.data.IterableDataset)
    - [torch.utils.data.get_worker_info](https://pytorch.org/docs/stable/data.html#torch.utils.data.get_worker_info)
    """

    code = "TL307"
    name = "iterable-dataset-without-worker-sharding"
    summary = "IterableDataset that ignores get_worker_info() loaded with num_workers > 1: every sample once per worker"
    severity = "warning"
    tags = ("correctness", "data-loading")
    requires_text = ("IterableDataset",)
    evidence = Evidence(probe=probe_iterable_sharding)

    def setup(self, ctx: FileContext) -> None:
        self._unsharded: dict[str, bool] = {}

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        if ctx.call_name(node) != DATALOADER or has_star_kwargs(node) or keyword(node, "worker_init_fn") is not None:
            return
        if any(isinstance(a, ast.Starred) for a in node.args) or len(node.args) > 10:
            return  # worker_init_fn is the 11th positional parameter
        given = arg_or_keyword(node, 5, "num_workers")
        workers = self._workers(given, node.lineno, ctx)
        dataset = arg_or_keyword(node, 0, "dataset")
        if workers is None or workers < 2 or dataset is None:  # one worker yields each sample once
            return
        cpu_count = isinstance(given, ast.Call)
        built = dataset
        if isinstance(dataset, ast.Name):
            built = ctx.value_before(dataset, node.lineno, module_fallback=True)  # type: ignore[assignment]
        if not (isinstance(built, ast.Call) and isinstance(built.func, ast.Name)):
            return
        cls = ctx.module_class(built.func.id)
        if cls is None or not self._ignores_workers(cls, ctx):
            return
        count = "the" if cpu_count else str(workers)
        self.report(dataset, UnshardedIterableDataset(dataset=cls.name, workers=count),
                    params={"num_workers": workers})

    def _workers(self, node: Optional[ast.AST], lineno: int, ctx: FileContext) -> Optional[int]:
        if node is None:
            return None
        if isinstance(node, ast.Call) and ctx.call_name(node) in _CPU_COUNTS and not node.args:
            return 2  # at least one core; more than one worker on any machine that has them
        if isinstance(node, ast.Name):
            node = ctx.value_before(node, lineno, module_fallback=True)
        value = literal(node)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def _ignores_workers(self, cls: ast.ClassDef, ctx: FileContext) -> bool:
        found = self._unsharded.get(cls.name)
        if found is None:
            found = self._unsharded[cls.name] = _ignores_workers(cls, ctx)
        return found


def _ignores_workers(cls: ast.ClassDef, ctx: FileContext) -> bool:
    if not any(ctx.module_scope.imports.qualname(b) in _ITERABLE for b in cls.bases):
        return False
    if _identifiers(cls) & _SHARDING:
        return False
    iter_fn = next((s for s in cls.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and s.name == "__iter__"), None)
    if iter_fn is None:
        return False
    walks = any(isinstance(n, (ast.For, ast.YieldFrom, ast.comprehension)) or
                (isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "iter")
                for n in ast.walk(iter_fn))
    generates = any(isinstance(n, ast.Call) and isinstance(n.func, (ast.Name, ast.Attribute))
                    and (n.func.attr if isinstance(n.func, ast.Attribute) else n.func.id) in _GENERATORS
                    for n in ast.walk(iter_fn))
    return walks and not generates
