"""TL320: a runtime check of `torchlint run` (the run's monitors and judges decide it)."""

from __future__ import annotations

from torchlint.runtime.checks import RuntimeCheck


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
    `Dataset.__init__` in a way TL301 cannot see statically.

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
