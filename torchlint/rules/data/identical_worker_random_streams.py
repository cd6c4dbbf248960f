"""TL320: a runtime check of `torchlint run`, with its monitor (what the program records) and judge."""

from __future__ import annotations

from collections import defaultdict
import functools
import os
import sys

from torchlint.diagnostics import Finding
import torchlint.runtime.judging as run
from torchlint.runtime.checks import RuntimeCheck

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Optional
    from pathlib import Path


class WorkerStreamMonitor:
    """In each DataLoader worker, after its worker_init_fn: the first DRAWS values of the global
    generators and of the dataset's RNG objects, drawn from copies (`worker_rng`); after the
    worker's first batch, which of those streams moved (`worker_rng_drawn`). Identical streams
    the dataset never draws from (an RNG used only in __init__) are harmless."""

    DRAWS = 4

    def worker_start(self, m: Any, loader_site: Optional[list], key: str, num_workers: int, worker_id: int) -> None:
        from torch.utils.data import get_worker_info

        info = get_worker_info()
        dataset = info.dataset if info is not None else None
        streams, global_streams = self.draws(dataset)
        m.sink.write({"kind": "worker_rng", "pid": os.getpid(), "site": loader_site, "loader": key,
                      "worker_id": worker_id, "num_workers": num_workers,
                      "dataset": type(dataset).__name__, "streams": streams, "global": global_streams})
        self.watch_first_fetch(m, key, worker_id, dataset, streams, global_streams)

    def watch_first_fetch(self, m: Any, key: str, worker_id: int, dataset: Any, streams: dict,
                          global_streams: dict) -> None:
        from torch.utils.data._utils import fetch

        monitor = self
        fetchers = (fetch._MapDatasetFetcher, fetch._IterableDatasetFetcher)
        originals = {cls: cls.__dict__["fetch"] for cls in fetchers if "fetch" in cls.__dict__}

        def wrap(original: Any) -> Any:
            @functools.wraps(original)
            def first_fetch(fetcher: Any, *args: Any, **kwargs: Any) -> Any:
                for cls, method in originals.items():  # once per worker: put torch back first
                    cls.fetch = method  # type: ignore[method-assign]
                result = original(fetcher, *args, **kwargs)
                try:
                    after, after_global = monitor.draws(dataset)
                    drawn = [f"streams:{n}" for n, d in streams.items() if after.get(n) != d]
                    drawn += [f"global:{n}" for n, d in global_streams.items() if after_global.get(n) != d]
                    m.sink.write({"kind": "worker_rng_drawn", "pid": os.getpid(), "loader": key,
                                  "worker_id": worker_id, "drawn": drawn})
                except Exception as exc:
                    m.internal_error("worker fetch", exc)
                return result

            return first_fetch

        for cls, method in originals.items():
            cls.fetch = wrap(method)  # type: ignore[method-assign]

    def draws(self, dataset: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """The next draws of the dataset's RNG objects and of the global generators, from copies."""
        import torch

        streams: dict[str, Any] = {}
        for label, rng in self.dataset_rngs(dataset):
            draws = self.peek(rng)
            if draws is not None:
                streams[label] = draws
        import random  # here, not at the top: linting imports this module for TL301's judge

        global_streams: dict[str, Any] = {"random": self.peek(random.Random(0), state=random.getstate())}
        np = sys.modules.get("numpy")
        if np is not None:
            legacy = np.random.RandomState()
            legacy.set_state(np.random.get_state())
            global_streams["numpy.random"] = self.rounded(legacy.random_sample(self.DRAWS).tolist())
        generator = torch.Generator()
        generator.set_state(torch.get_rng_state())
        global_streams["torch"] = self.rounded(torch.rand(self.DRAWS, generator=generator).tolist())
        return streams, global_streams

    @staticmethod
    def rounded(values: list) -> list:
        return [round(float(v), 8) for v in values]

    def dataset_rngs(self, dataset: Any, prefix: str = "self", depth: int = 0) -> list:
        found: list = []
        attributes = getattr(dataset, "__dict__", None)
        if not isinstance(attributes, dict):
            return found
        for name, value in attributes.items():
            kind = self.rng_kind(value)
            if kind is not None:
                found.append((f"{prefix}.{name} ({kind})", value))
            elif depth < 1 and hasattr(value, "__getitem__") and hasattr(value, "__dict__") and not isinstance(value, type):
                found.extend(self.dataset_rngs(value, f"{prefix}.{name}", depth + 1))
            elif depth < 1 and isinstance(value, (list, tuple)) and len(value) <= 16:  # ConcatDataset.datasets
                for index, item in enumerate(value):
                    found.extend(self.dataset_rngs(item, f"{prefix}.{name}[{index}]", depth + 1))
        return found

    @staticmethod
    def rng_kind(value: Any) -> Optional[str]:
        import random

        if isinstance(value, random.Random):
            return "random.Random"
        np = sys.modules.get("numpy")
        if np is not None:
            if isinstance(value, np.random.Generator):
                return "numpy.random.Generator"
            if isinstance(value, np.random.RandomState):
                return "numpy.random.RandomState"
        torch = sys.modules.get("torch")
        if torch is not None and isinstance(value, torch.Generator) and value.device.type == "cpu":
            return "torch.Generator"
        return None

    def peek(self, rng: Any, state: Any = None) -> Optional[list]:
        """The next draws of `rng`, taken from a copy so the program's own stream is untouched."""
        import copy
        import random

        if isinstance(rng, random.Random):
            twin = random.Random(0)
            twin.setstate(state if state is not None else rng.getstate())
            return self.rounded([twin.random() for _ in range(self.DRAWS)])
        torch = sys.modules.get("torch")
        if torch is not None and isinstance(rng, torch.Generator):
            twin = torch.Generator()
            twin.set_state(rng.get_state())
            return self.rounded(torch.rand(self.DRAWS, generator=twin).tolist())
        twin = copy.deepcopy(rng)
        draw = getattr(twin, "random", None) or getattr(twin, "random_sample", None)
        return self.rounded(list(draw(self.DRAWS))) if draw is not None else None


class IdenticalWorkerRandomStreams(RuntimeCheck):
    """Runtime-only check: reported by `torchlint run`, at the `DataLoader(...)` construction.

    ## What it does
    In every DataLoader worker, after the `worker_init_fn` (if any) has run, peeks at the first
    values each random stream would produce (the global `random`, legacy `np.random` and `torch`
    generators, and RNG objects stored on the dataset), drawing from copies so the program's own
    streams are untouched, and reports streams that are identical in all workers of one
    DataLoader.

    A stream counts only if it moved while the worker loaded its first batch: an RNG object that
    the dataset uses only in `__init__` (to build fixed data) is identical in every worker but
    never drawn from, and is not reported.

    ## Why is this bad?
    Workers with identical streams apply identical "random" augmentations: with N workers the
    data is N-fold less diverse than intended, and nothing fails. torch re-seeds the global
    generators per worker, so this mostly comes from a `worker_init_fn` that seeds every worker
    with the same constant (`np.random.seed(0)`), or from an RNG object created in
    `Dataset.__init__` in a way {rule:worker-rng-duplication} cannot see statically.

    ## Example
    ```python
    def worker_init_fn(worker_id):
        np.random.seed(42)  # every worker gets the same stream

    loader = DataLoader(dataset, num_workers=4, worker_init_fn=worker_init_fn)
    ```

    ## Use instead
    ```python
    def worker_init_fn(worker_id):
        np.random.seed(torch.utils.data.get_worker_info().seed % 2**32)

    loader = DataLoader(dataset, num_workers=4, worker_init_fn=worker_init_fn)
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [torch.utils.data: randomness in multi-process data loading](https://pytorch.org/docs/stable/data.html#randomness-in-multi-process-data-loading)
    - [Reproducibility: DataLoader](https://pytorch.org/docs/stable/notes/randomness.html#dataloader)
    """

    code = "TL320"
    name = "identical-worker-random-streams"
    summary = "DataLoader workers produced identical random streams"
    seen = "DataLoader workers drawing identical random streams"
    monitor = WorkerStreamMonitor

    @classmethod
    def problems(cls, obs: run.Observation, static: list[Finding], cwd: Path) -> list[run.RuntimeProblem]:
        """The run's findings of this check."""
        # A dataset RNG flagged statically is the static finding's (TL301) to confirm.
        static_sites = {(os.path.realpath(cwd / f.path), f.row) for f in static if f.code == "TL301"}
        out = []
        for group in worker_groups(obs, lambda e: True):
            moved = drawn(obs, group)
            same = dict(identical(group, "global", moved))
            site = group[0]["site"]
            if site is None or (site[0], site[1]) not in static_sites:  # else TL301 reports the dataset's own RNGs
                same.update(identical(group, "streams", moved))
            if same:
                names = ", ".join(same)
                first = next(iter(same.values()))
                out.append(run.RuntimeProblem(cls.code, site, f"{len(group)} DataLoader workers drew identical first values "
                                                             f"from {names} (e.g. {first})"))
        return out


def worker_groups(obs: run.Observation, match: Callable[[dict], bool]) -> list[list[dict]]:
    groups: dict[str, list[dict]] = defaultdict(list)
    for e in obs.by_kind["worker_rng"]:
        if match(e):
            groups[e["loader"]].append(e)
    return [sorted(g, key=lambda e: e["worker_id"]) for g in groups.values()]


def identical(group: list[dict], section: str, drawn: set[str]) -> dict[str, list]:
    """Streams every worker of the group drew identically, of those the dataset drew from."""
    if len(group) < 2:
        return {}
    names = set.intersection(*(set(e[section]) for e in group))
    return {n: group[0][section][n] for n in sorted(names)
            if group[0][section][n] is not None and all(e[section][n] == group[0][section][n] for e in group)
            and f"{section}:{n}" in drawn}


def drawn(obs: run.Observation, group: list[dict]) -> set[str]:
    """The streams that moved during a first batch of any worker of the group's DataLoader."""
    loader = group[0]["loader"]
    return {name for e in obs.by_kind["worker_rng_drawn"] if e.get("loader") == loader for name in e["drawn"]}
