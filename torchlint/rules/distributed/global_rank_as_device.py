"""TL503: the global rank (`dist.get_rank()`) used as a CUDA device index."""

from __future__ import annotations

import ast

from torchlint.checker import FileContext
from torchlint.rules.base import Evidence, Rule, Violation, keyword

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional

_GET_RANK = "torch.distributed.get_rank"
_DDP = ("torch.nn.parallel.DistributedDataParallel",)


class GlobalRankAsDeviceIndex(Violation):
    help = "Use the local rank (`LOCAL_RANK`, which torchrun sets)"

    def message(self) -> str:
        return "`dist.get_rank()` is the global rank, not this machine's GPU index: wrong past one node"


class GlobalRankAsDevice(Rule):
    """## What it does
    Flags the global rank, `torch.distributed.get_rank()` (directly or through a variable
    assigned from it), used as a CUDA device index: `torch.cuda.set_device(rank)`,
    `torch.device("cuda", rank)`, `DistributedDataParallel(..., device_ids=[rank])` or
    `output_device=rank`, `x.cuda(rank)` and `x.to(rank)`. `get_rank(group)` (a rank within a
    group) and other uses of the rank (file names, `if rank == 0`, samplers) are not flagged.

    ## Why is this bad?
    `get_rank()` numbers processes across *all* nodes. With the usual one process per GPU, the
    processes on the second node get ranks 8 to 15 on 8-GPU machines, and those name GPUs that
    do not exist there: the job fails as soon as it runs on more than one node, although it
    worked on one. The index of the GPU on this machine is the *local* rank, which `torchrun`
    passes in the `LOCAL_RANK` environment variable.

    ## Example
    ```python
    dist.init_process_group("nccl")
    local_rank = dist.get_rank()
    torch.cuda.set_device(local_rank)
    ```

    ## Use instead
    ```python
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    ```

    ## Fix safety
    No automatic fix: where the local rank comes from depends on the launcher (`torchrun`,
    SLURM, a custom spawner).

    ## References
    - [torchrun environment variables](https://pytorch.org/docs/stable/elastic/run.html#environment-variables)
    - [torch.distributed.get_rank](https://pytorch.org/docs/stable/distributed.html#torch.distributed.get_rank)
    """

    code = "TL503"
    name = "global-rank-as-device"
    summary = "The global rank from dist.get_rank() used as a CUDA device index"
    severity = "warning"
    tags = ("correctness", "distributed", "device")
    precision = "very-high"
    requires_text = ("get_rank",)
    evidence = Evidence(reason=("the failure needs more than one node (a global rank at or above one machine's GPU "
                                "count); a single CPU machine cannot show it"))

    def _is_global_rank(self, node: ast.AST, ctx: FileContext) -> bool:
        if isinstance(node, ast.Call):
            return not node.args and not node.keywords and ctx.call_name(node) == _GET_RANK
        if isinstance(node, ast.Name):
            value = ctx.value_before(node, node.lineno, module_fallback=True)  # type: ignore[attr-defined]
            return value is not None and self._is_global_rank(value, ctx)
        return False

    def _device_index(self, node: ast.Call, ctx: FileContext) -> Optional[ast.AST]:
        """The argument of `node` that is a CUDA device index, if any."""
        func = node.func
        name = ctx.call_name(node)
        if name == "torch.cuda.set_device" and node.args:
            return node.args[0]
        if name == "torch.device" and len(node.args) == 2:
            return node.args[1]
        if name in _DDP:
            ids = keyword(node, "device_ids")
            if ids is not None and isinstance(ids.value, (ast.List, ast.Tuple)) and len(ids.value.elts) == 1:
                return ids.value.elts[0]
            out = keyword(node, "output_device")
            return out.value if out is not None else None
        if isinstance(func, ast.Attribute) and func.attr in ("cuda", "to") and len(node.args) == 1 \
                and not node.keywords:
            return node.args[0]  # `x.cuda(rank)`, `model.to(rank)`: an int means that CUDA device
        return None

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        index = self._device_index(node, ctx)
        if index is None or not self._is_global_rank(index, ctx):
            return
        self.report(index, GlobalRankAsDeviceIndex())
