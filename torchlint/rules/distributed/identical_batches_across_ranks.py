"""TL520: a runtime check of `torchlint run`, with its monitor (what the program records) and judge."""

from __future__ import annotations

from collections import defaultdict
import hashlib

from torchlint.diagnostics import Finding
import torchlint.runtime.judging as run
from torchlint.runtime.checks import RuntimeCheck

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional
    from pathlib import Path


class BatchFingerprintMonitor:
    """Under a process group of more than one rank, a fingerprint of the first input of the
    first LIMIT training forwards of each process, to compare across ranks."""

    LIMIT = 8

    def __init__(self) -> None:
        self.hashes = 0

    def root_forward(self, m: Any, module: Any, args: Any, site: Optional[list]) -> None:
        import torch

        if self.hashes >= self.LIMIT or not torch.is_grad_enabled() or not module.training:
            return
        dist = m.dist()
        inputs = m.tensors(args)
        if dist is not None and dist.get_world_size() > 1 and inputs:
            self.hashes += 1
            m.record("batch", site, index=self.hashes, hash=self.fingerprint(inputs[0]),
                     input=m.describe(inputs[0]), module=type(module).__name__)

    @staticmethod
    def fingerprint(tensor: Any) -> str:
        data = tensor.detach().cpu().contiguous()
        try:
            raw = data.numpy().tobytes()
        except Exception:  # dtypes numpy lacks (bfloat16) or no numpy
            raw = repr(data.float().tolist()).encode()
        return hashlib.sha1(raw + str(tuple(data.shape)).encode()).hexdigest()[:16]


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
    peer_checks = {"TG012": "covered at run time (every rank receiving the same batches)"}  # rules_docs/peer-parity.md
    seen = "every DDP rank fed the same batches (no DistributedSampler)"
    monitor = BatchFingerprintMonitor

    @classmethod
    def problems(cls, obs: run.Observation, static: list[Finding], cwd: Path) -> list[run.RuntimeProblem]:
        """The run's findings of this check."""
        by_site: dict[tuple, dict[int, list[dict]]] = defaultdict(lambda: defaultdict(list))
        for e in obs.by_kind["batch"]:
            if e.get("world", 1) > 1 and e.get("site"):
                by_site[tuple(e["site"][:2])][e["rank"]].append(e)
        out = []
        for ranks in by_site.values():
            if len(ranks) < 2:
                continue
            common = min(len(v) for v in ranks.values())
            identical = common > 0 and all(len({ranks[r][i]["hash"] for r in ranks}) == 1 for i in range(common))
            if identical:
                first = next(iter(ranks.values()))[0]
                out.append(run.RuntimeProblem(cls.code, first["site"],
                                              f"all {len(ranks)} ranks fed {first['module']} identical batches in the "
                                              f"{common} training forward(s) compared (input {run.shape(first['input'])} "
                                              f"{first['input']['dtype']})"))
        return out
