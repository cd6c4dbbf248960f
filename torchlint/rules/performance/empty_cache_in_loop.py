"""TL806: `torch.cuda.empty_cache()` on every step of a training loop."""

from __future__ import annotations

import ast

from torchlint.analysis.training_step import training_steps
from torchlint.checker import FileContext
from torchlint.rules.base import Evidence, Rule, Violation

_EMPTY_CACHE = frozenset({"torch.cuda.empty_cache", "torch.cuda.memory.empty_cache"})
# Names in an `if` test that only ask whether there is a GPU: the call still runs every step.
_DEVICE_WORDS = ("cuda", "gpu", "device", "is_available")


class EmptyCacheEveryStep(Violation):
    help = "Remove it, or call it once outside the loop"

    def message(self) -> str:
        return "`torch.cuda.empty_cache()` every training step: the next step re-allocates through the driver"


class EmptyCacheInLoop(Rule):
    """On the 2026-12 held-out corpus (54 projects, independent triage), 0 of 1 findings were true (freeing the cache once per trial of a batch-size search);
    off by default. Enable it with `--extend-select TL806`.

    ## What it does
    Flags `torch.cuda.empty_cache()` on every iteration of a loop whose own body runs a training
    step (`backward()` or an optimizer `step()`). A call under an `if` (every N steps, on a
    memory threshold) or in an `except` handler (recovery from out-of-memory) is not flagged; an
    `if` that only asks whether CUDA is available does not count as a condition. Calls once per
    epoch, in an outer loop whose body does not itself step, are not flagged.

    ## Why is this bad?
    PyTorch's caching allocator keeps freed GPU blocks to serve the next step's allocations
    without asking the driver. `empty_cache()` hands them all back, so the next step allocates
    every activation again through `cudaMalloc`, which synchronizes the device; freeing does not
    give the process more memory to use (the blocks were already reusable), it only makes the
    memory show as free in `nvidia-smi`. Per step, the training loop pays for the allocations and
    the syncs and gains nothing.

    `--verify` reports this rule as `skipped`: the cost is a throughput loss that depends on the
    GPU and the model; there is no wrong result to show.

    ## Example
    ```python
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        torch.cuda.empty_cache()
    ```

    ## Use instead
    ```python
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    torch.cuda.empty_cache()  # once, if another process needs the memory
    ```

    ## Fix safety
    No automatic fix: where the memory is needed (another process, a phase change) is for the
    author to say.

    ## References
    - [CUDA semantics: memory management](https://pytorch.org/docs/stable/notes/cuda.html#memory-management)
    - [torch.cuda.empty_cache](https://pytorch.org/docs/stable/generated/torch.cuda.empty_cache.html)
    """

    code = "TL806"
    default_enabled = False
    name = "empty-cache-in-loop"
    summary = "`torch.cuda.empty_cache()` every training step re-allocates through the driver and syncs"
    severity = "warning"
    tags = ("performance", "training-loop")
    precision = "high"
    requires_text = ("empty_cache",)
    evidence = Evidence(reason="the cost is a throughput loss that depends on the GPU and the model; no wrong result to show")

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        if not ctx.loops or ctx.call_name(node) not in _EMPTY_CACHE:
            return
        loop = ctx.loops[-1]
        for parent in reversed(ctx.parents):
            if parent is loop:
                break
            if isinstance(parent, ast.ExceptHandler):
                return
            if isinstance(parent, (ast.If, ast.IfExp)) and not _device_test(parent.test):
                return
        scope = ctx.function if ctx.function is not None else ctx.tree
        steps = training_steps(ctx).body(loop, scope)
        if not steps.backwards and not steps.steps:
            return
        self.report(node, EmptyCacheEveryStep())


def _device_test(test: ast.AST) -> bool:
    """Is the `if` only about having a GPU (`torch.cuda.is_available()`, `device.type == "cuda"`)?"""
    text = ast.unparse(test).lower()
    return any(w in text for w in _DEVICE_WORDS) and not any(isinstance(n, ast.BinOp) for n in ast.walk(test))
