"""TL301: an RNG object stored on a Dataset is copied into every DataLoader worker."""

from __future__ import annotations

import ast



from torchlint.analysis.dataloader import nonzero_workers
from torchlint.analysis.torch_api import DATALOADER, RNG_CONSTRUCTORS
from torchlint.checker import FileContext
from torchlint.records import RuntimeResult
from torchlint.rules.base import Evidence, Rule, Violation, arg_or_keyword, has_star_kwargs, keyword, literal
from torchlint.rules.data.identical_worker_random_streams import drawn, identical, worker_groups
import torchlint.runtime.judging as run

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional
    from pathlib import Path


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


# -- evidence (runs only in the --verify worker: see CONTRIBUTING.md) ----------------------
def probe_worker_rng(params: dict, device: str) -> tuple[str, str]:
    kind = params.get("rng", "np.random.default_rng")
    workers = params.get("num_workers", 2)
    workers = min(workers, 4) if isinstance(workers, int) and not isinstance(workers, bool) else 2
    if workers < 2:
        return "not-reproduced", f"with num_workers={workers} there is no second worker to repeat the stream"
    streams = _worker_streams(kind, workers)
    values = list(streams.values())
    if len(values) == workers and all(v == values[0] for v in values[1:]):
        return "confirmed", f"{workers} workers drew identical streams from {kind}: {values[0][:2]}..."
    return "not-reproduced", f"{workers} workers drew different streams from {kind}: " + \
        ", ".join(str(v[:2]) for v in values)


class _RngDataset:
    """A map-style dataset (a DataLoader needs no torch base class) drawing from one RNG of
    `kind` built in __init__, or from numpy's global RNG for "global-numpy"."""

    def __init__(self, kind: str) -> None:
        import random

        import numpy as np
        import torch

        self.kind = kind
        self.rng: Any = {
            "np.random.default_rng": lambda: np.random.default_rng(0),
            "np.random.RandomState": lambda: np.random.RandomState(0),
            "np.random.Generator": lambda: np.random.Generator(np.random.PCG64(0)),
            "random.Random": lambda: random.Random(0),
            "torch.Generator": lambda: torch.Generator().manual_seed(0),
        }.get(kind, lambda: None)()

    def __len__(self) -> int:
        return 8

    def __getitem__(self, idx: int) -> float:
        import numpy as np
        import torch

        if self.kind == "global-numpy":
            return float(np.random.rand())
        if self.kind == "torch.Generator":
            return float(torch.rand(1, generator=self.rng).item())
        return float(self.rng.random())


def _worker_streams(kind: str, workers: int) -> dict[int, list[float]]:
    import sys

    import torch

    loader: Any = torch.utils.data.DataLoader(_RngDataset(kind), batch_size=2, num_workers=workers,  # type: ignore[arg-type]
                                         multiprocessing_context="fork" if sys.platform.startswith("linux") else None)
    streams: dict[int, list[float]] = {}
    for i, batch in enumerate(loader):
        streams.setdefault(i % workers, []).extend(round(float(v), 8) for v in batch)
    return streams


def _flat(value: Any, out: list[float], limit: int = 16) -> list[float]:
    """The numbers in a sample (tensors, arrays, scalars, nested tuples/lists/dicts)."""
    import torch

    stack = [value]
    while stack and len(out) < limit:
        v = stack.pop(0)
        if isinstance(v, torch.Tensor):
            out.extend(float(x) for x in v.detach().flatten()[:limit].tolist())
        elif isinstance(v, (int, float, bool)):
            out.append(float(v))
        elif isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
        elif hasattr(v, "dtype") and hasattr(v, "tolist"):  # numpy arrays and scalars
            stack.append(torch.as_tensor(v))
    return [round(x, 8) for x in out[:limit]]


class _Tagged:
    """The user's dataset, each sample tagged with the id of the worker that drew it."""

    def __init__(self, dataset: Any, size: int) -> None:
        self.dataset, self.size = dataset, size

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> tuple[int, list[float]]:
        import torch

        info = torch.utils.data.get_worker_info()
        return (info.id if info is not None else -1), _flat(self.dataset[index], [])


def _worker_samples(loader: Any) -> list[list[list[float]]]:
    """Per worker, in worker order, the samples the user's dataset and worker_init_fn give: one
    sample per index, in order, so worker k draws indices k, k + workers, ..."""
    import sys

    import torch

    workers = loader.num_workers
    size = min(len(loader.dataset), 4 * workers)
    tagged: Any = torch.utils.data.DataLoader(_Tagged(loader.dataset, size),  # type: ignore[arg-type]
                                         batch_size=None, num_workers=workers,
                                         worker_init_fn=loader.worker_init_fn,
                                         multiprocessing_context="fork" if sys.platform.startswith("linux") else None)
    streams: dict[int, list[list[float]]] = {}
    for worker, sample in tagged:
        streams.setdefault(int(worker), []).append(sample)
    return [streams[k] for k in sorted(streams)]


class _Draws:
    """The user's dataset's RNG attribute as each worker holds it: index i runs the user's
    `__getitem__(i)` (which may re-seed its generator), then gives (worker id, two draws from
    a copy of the generator). Other randomness in the sample (torch's, which DataLoader seeds
    per worker) then cannot hide that the generator's copies run in step."""

    def __init__(self, dataset: Any, attribute: str, size: int) -> None:
        self.dataset, self.attribute, self.size = dataset, attribute, size

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> tuple[int, list[float]]:
        import torch

        info = torch.utils.data.get_worker_info()
        self.dataset[index]
        return (info.id if info is not None else -1), _two_draws(getattr(self.dataset, self.attribute, None))


def _two_draws(rng: Any) -> list[float]:
    """Two numbers from a copy of `rng` (its own state is left as it is); [] for an unknown kind."""
    import copy
    import random

    import torch

    if isinstance(rng, torch.Generator):
        twin = torch.Generator()
        twin.set_state(rng.get_state())
        return [round(float(v), 8) for v in torch.rand(2, generator=twin).tolist()]
    if isinstance(rng, random.Random):
        twin_random = copy.deepcopy(rng)
        return [round(twin_random.random(), 8) for _ in range(2)]
    draw = getattr(copy.deepcopy(rng), "random", None) if hasattr(rng, "bit_generator") or \
        hasattr(rng, "random_sample") else None  # numpy Generator / RandomState
    return [round(float(v), 8) for v in draw(2)] if callable(draw) else []


def _worker_draws(loader: Any, attribute: str) -> list[list[float]]:
    """Per worker, the first two draws from its copy of the dataset's generator `attribute`."""
    import sys

    import torch

    workers = loader.num_workers
    tagged: Any = torch.utils.data.DataLoader(_Draws(loader.dataset, attribute, workers),  # type: ignore[arg-type]
                                         batch_size=None, num_workers=workers, worker_init_fn=loader.worker_init_fn,
                                         multiprocessing_context="fork" if sys.platform.startswith("linux") else None)
    first: dict[int, list[float]] = {}
    for worker, draws in tagged:
        first.setdefault(int(worker), draws)
    return [first[k] for k in sorted(first)]


def judge_worker_rng(facts: dict, runs: list) -> Optional[tuple[str, str]]:
    import torch
    from _evidence import failed, flag

    rec = flag(runs)
    if rec is None or failed(rec, "creating the DataLoader"):
        return failed(rec, "creating the DataLoader")
    loader = rec.get("value")
    if not isinstance(loader, torch.utils.data.DataLoader) or isinstance(
            loader.dataset, torch.utils.data.IterableDataset):
        return None
    if loader.num_workers < 2:
        return "not-reproduced", f"num_workers={loader.num_workers}: no second worker to repeat the stream"
    attribute = str(facts.get("attribute") or "")
    draws = _worker_draws(loader, attribute) if attribute else []
    if len(draws) >= 2 and draws[0] and all(d == draws[0] for d in draws[1:]):
        name = f"{type(loader.dataset).__name__}.{attribute}"
        return ("confirmed", f"the {len(draws)} workers' copies of `{name}` drew the same numbers: {draws[0]}")
    values = _worker_samples(loader)
    if len(values) >= 2 and all(v == values[0] for v in values[1:]) and values[0]:
        return ("confirmed", f"the {len(values)} workers of this DataLoader produced identical samples: "
                             f"{values[0][0][:3]}, ... from different indices")
    return "not-reproduced", f"the {len(values)} workers produced different samples: " + ", ".join(
        str(v[0][:2]) for v in values[:3])


class RngCopiedToWorkers(Violation):
    dataset: str
    attribute: str
    kind: str  # the generator's kind, `np.random.RandomState`
    help = "Re-seed it per worker in a `worker_init_fn` (from `get_worker_info().seed`)"

    def message(self) -> str:
        return (f"Every worker gets a copy of `{self.dataset}.{self.attribute}` ({self.kind}): "
                "identical random streams")


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
    peer_checks = {"W5512": "partly, and the rest is obsolete: since torch 1.9 workers re-seed `random`, `torch` and NumPy's global RNG; the hazard left is an RNG object built in the dataset, which TL301 reports"}  # rules_docs/peer-parity.md
    severity = "warning"
    tags = ("correctness", "data-loading", "reproducibility")
    requires_text = ('DataLoader',)
    evidence = Evidence(probe=probe_worker_rng, slice="call", judge=judge_worker_rng, runtime=run_verdict)

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
        self.report(node, RngCopiedToWorkers(dataset=cls.name, attribute=attr, kind=kind),
                    params={"rng": kind, "num_workers": workers if isinstance(workers, int) else 2,
                            "attribute": attr})

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
