"""TL321: a runtime check of `torchlint run`, with its monitor (what the program records) and judge."""

from __future__ import annotations

from collections import defaultdict
import functools
import hashlib
import os

from torchlint.diagnostics import Finding
import torchlint.runtime.judging as run
from torchlint.runtime.checks import RuntimeCheck

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional
    from pathlib import Path


class WorkerSampleMonitor:
    """In each DataLoader worker of an IterableDataset: fingerprints of the first SAMPLES
    samples its iterator yields (before collation), written as one `worker_samples` event when
    it has them or when the iterator ends. Read-only: the samples go on to the batch unchanged."""

    SAMPLES = 8

    def worker_start(self, m: Any, loader_site: Optional[list], key: str, num_workers: int, worker_id: int) -> None:
        import torch
        from torch.utils.data import get_worker_info
        from torch.utils.data._utils import fetch

        info = get_worker_info()
        if info is None or num_workers < 2 or not isinstance(info.dataset, torch.utils.data.IterableDataset):
            return
        monitor = self
        fetcher_class = fetch._IterableDatasetFetcher
        original = fetcher_class.__dict__["__init__"]
        head = {"kind": "worker_samples", "pid": os.getpid(), "site": loader_site, "loader": key,
                "worker_id": worker_id, "num_workers": num_workers, "dataset": type(info.dataset).__name__}

        @functools.wraps(original)
        def init(fetcher: Any, *args: Any, **kwargs: Any) -> None:
            fetcher_class.__init__ = original  # type: ignore[method-assign]  # once per worker
            original(fetcher, *args, **kwargs)
            fetcher.dataset_iter = monitor.recording(m, fetcher.dataset_iter, head)

        fetcher_class.__init__ = init  # type: ignore[method-assign,assignment]

    def recording(self, m: Any, iterator: Any, head: dict) -> Any:
        """`iterator`, yielding the same items, that writes the first items' fingerprints."""
        prints: list[str] = []
        try:
            while True:
                try:
                    item = next(iterator)  # not `for`: __iter__ may return an object with only __next__
                except StopIteration:
                    return
                if len(prints) < self.SAMPLES:
                    try:
                        prints.append(self.fingerprint(item))
                    except Exception as exc:
                        m.internal_error("WorkerSampleMonitor.fingerprint", exc)
                        prints.append("?")
                    if len(prints) == self.SAMPLES:
                        m.sink.write({**head, "samples": prints})
                yield item
        finally:
            if len(prints) < self.SAMPLES:
                m.sink.write({**head, "samples": prints})

    def fingerprint(self, item: Any) -> str:
        digest = hashlib.blake2b(digest_size=8)
        self.feed(digest, item, 0)
        return digest.hexdigest()

    def feed(self, digest: Any, value: Any, depth: int) -> None:
        import torch

        if isinstance(value, torch.Tensor):
            value = value.detach().cpu().contiguous()
            digest.update(f"T{value.dtype}{tuple(value.shape)}".encode())
            try:
                digest.update(value.view(-1).view(torch.uint8).numpy().tobytes())
            except Exception:  # no numpy in the program's environment
                digest.update(repr(value.tolist()).encode())
        elif depth < 4 and isinstance(value, (list, tuple)):
            digest.update(f"L{len(value)}".encode())
            for element in value:
                self.feed(digest, element, depth + 1)
        elif depth < 4 and isinstance(value, dict):
            digest.update(f"D{len(value)}".encode())
            for k in sorted(value, key=repr):
                digest.update(repr(k).encode())
                self.feed(digest, value[k], depth + 1)
        elif hasattr(value, "tobytes") and hasattr(value, "dtype"):  # a numpy array or scalar
            digest.update(f"N{value.dtype}{getattr(value, 'shape', ())}".encode())
            digest.update(value.tobytes())
        else:
            digest.update(repr(value)[:10_000].encode())


class DuplicateWorkerSamples(RuntimeCheck):
    """Runtime-only check: reported by `torchlint run`, at the `DataLoader(...)` construction.

    ## What it does
    In each worker of a DataLoader over an `IterableDataset` with two or more workers, takes
    fingerprints of the first 8 samples the worker's iterator yields, and reports a
    DataLoader whose workers yielded the same sequence of samples (at least two samples, not
    all equal: a stream of constant samples proves nothing). A dataset that shards its stream
    with `get_worker_info()`, or whose workers draw different random samples, is not reported.

    ## Why is this bad?
    Each DataLoader worker holds its own copy of an `IterableDataset` and iterates it from the
    start. Unless `__iter__` uses `torch.utils.data.get_worker_info()` to take its share, every
    sample is yielded once per worker: with 4 workers an epoch is 4 epochs of the same data in
    lockstep, the step count is 4 times too high, and batches hold near-identical neighbours.
    Nothing fails.

    ## Example
    ```python
    class Lines(IterableDataset):
        def __iter__(self):
            return iter(read_lines(self.path))

    loader = DataLoader(Lines(path), batch_size=32, num_workers=4)
    ```

    ## Use instead
    ```python
    class Lines(IterableDataset):
        def __iter__(self):
            info = get_worker_info()
            lines = read_lines(self.path)
            if info is not None:
                lines = itertools.islice(lines, info.id, None, info.num_workers)
            return iter(lines)
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [torch.utils.data.IterableDataset](https://pytorch.org/docs/stable/data.html#torch.utils.data.IterableDataset)
    - [torch.utils.data.get_worker_info](https://pytorch.org/docs/stable/data.html#torch.utils.data.get_worker_info)
    """

    code = "TL321"
    name = "duplicate-worker-samples"
    summary = "DataLoader workers of an IterableDataset yielded the same samples"
    seen = "every worker of an IterableDataset yielding the same samples"
    monitor = WorkerSampleMonitor

    @classmethod
    def problems(cls, obs: run.Observation, static: list[Finding], cwd: Path) -> list[run.RuntimeProblem]:
        """The run's findings of this check."""
        loaders: dict[str, dict[int, dict]] = defaultdict(dict)
        for e in obs.by_kind["worker_samples"]:
            loaders[e["loader"]].setdefault(e["worker_id"], e)
        out = []
        for workers in loaders.values():
            groups: dict[tuple, list[int]] = defaultdict(list)
            for worker_id, e in sorted(workers.items()):
                samples = tuple(e["samples"])
                if len(samples) >= 2 and len(set(samples)) > 1 and "?" not in samples:
                    groups[samples].append(worker_id)
            same = max(groups.values(), key=len, default=[])
            if len(same) < 2:
                continue
            e = workers[same[0]]
            ids = ", ".join(str(i) for i in same)
            out.append(run.RuntimeProblem(cls.code, e["site"],
                                          f"{len(same)} of the {e['num_workers']} workers (ids {ids}) of this DataLoader "
                                          f"over {e['dataset']} yielded the same first {len(e['samples'])} samples: each "
                                          f"worker iterates the whole IterableDataset, so every sample is seen once per "
                                          f"worker (shard it with get_worker_info())"))
        return out
