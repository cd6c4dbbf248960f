"""TL520: a runtime check of `torchlint run` (the run's monitors and judges decide it)."""

from __future__ import annotations

from torchlint.runtime.checks import RuntimeCheck


class IdenticalBatchesAcrossRanks(RuntimeCheck):
    """Runtime-only check: reported by `torchlint run` under `torchrun` (or any launcher that starts a
    `torch.distributed` process group), at the call of the model.

    ## What it does
    On each rank, fingerprints the first input of the first training forwards (grad enabled,
    module in train mode) of each top-level module, and reports when every rank fed the model
    identical batches in every forward compared.

    ## Why is this bad?
    With a plain `DataLoader` every rank iterates over the whole dataset in the same order, so N
    GPUs compute the same gradient N times: training costs N times more for the result of one
    GPU, and each "epoch" is really one pass repeated. A `DistributedSampler` (or per-rank
    sharding of the data) gives each rank its own part.

    ## Example
    ```python
    dist.init_process_group("nccl")
    model = DDP(Net().to(rank), device_ids=[rank])
    loader = DataLoader(dataset, batch_size=32, shuffle=True)
    ```

    ## Use instead
    ```python
    sampler = DistributedSampler(dataset, shuffle=True)
    loader = DataLoader(dataset, batch_size=32, sampler=sampler)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        ...
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [torch.utils.data.distributed.DistributedSampler](https://pytorch.org/docs/stable/data.html#torch.utils.data.distributed.DistributedSampler)
    - [Getting started with DDP](https://pytorch.org/tutorials/intermediate/ddp_tutorial.html)
    """

    code = "TL520"
    name = "identical-batches-across-ranks"
    summary = "Every DDP rank received the same batches (no DistributedSampler or sharding)"
    seen = "every DDP rank fed the same batches (no DistributedSampler)"
