"""TL802 (off by default): host-device syncs on every training step."""

from __future__ import annotations

import ast

from torchlint.analysis import inference
from torchlint.analysis.loops import is_backward
from torchlint.checker import FileContext
from torchlint.rules.base import Evidence, Rule, Violation, dotted

_SYNCING = frozenset({"item", "cpu", "numpy", "tolist"})
_SYNCHRONIZE = frozenset({"torch.cuda.synchronize"})


class SyncEveryStep(Violation):
    call: str  # `torch.cuda.synchronize()`, `loss.item()`, `print(<tensor>)`

    def message(self) -> str:
        return f"`{self.call}` on every training step waits for the device"

    def help_text(self) -> str:
        if self.call.startswith("torch.cuda"):
            return "Remove it, or synchronize only around the steps you time"
        return "Accumulate on the device and sync every N steps"


class SyncInTrainingLoop(Rule):
    """## What it does
    Flags `.item()`, `.cpu()`, `.numpy()`, `.tolist()`, `print(<tensor>)` and
    `torch.cuda.synchronize()` on every iteration of a loop that calls `.backward()` (not inside
    an `if`, which usually rate-limits logging). Off by default: useful when profiling.

    ## Why is this bad?
    Each of these copies a value to the host (or, for `torch.cuda.synchronize()`, simply blocks),
    so the CPU waits until the GPU has finished all queued work: the pipeline drains every step
    and GPU utilisation drops. A `synchronize()` is needed around a timing measurement, which is
    why an `if` around it (profile every N steps) is not flagged.

    `--verify` reports this rule as `skipped`: the cost is a throughput loss that depends on the GPU and the model; no wrong result to show.

    ## Example
    ```python
    for x, y in loader:
        loss = step(x, y)
        loss.backward()
        history.append(loss.item())
    ```

    ## Use instead
    ```python
    running = torch.zeros((), device=device)
    for i, (x, y) in enumerate(loader):
        loss = step(x, y)
        loss.backward()
        running += loss.detach()
        if i % 100 == 0:
            history.append(running.item() / 100)
            running.zero_()
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [CUDA semantics: asynchronous execution](https://pytorch.org/docs/stable/notes/cuda.html#asynchronous-execution)
    """

    code = "TL802"
    name = "sync-in-training-loop"
    summary = ".item()/.cpu()/.numpy()/print(tensor)/cuda.synchronize() every training step forces a device sync"
    peer_checks = {"TG007": "covered: TL802 reports syncs (and `torch.cuda.synchronize()`) on every step; off by default, as a profiling aid"}  # rules_docs/peer-parity.md
    severity = "info"
    default_enabled = False
    tags = ("performance", "training-loop")
    requires_text = ('backward',)
    evidence = Evidence(reason='the cost is a throughput loss that depends on the GPU and the model; no wrong result to show')
    precision = "medium"

    def setup(self, ctx: FileContext) -> None:
        self._backwards: dict[int, list[ast.Call]] = {}  # per loop: asked once, not once per sync call

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        if not ctx.loops:
            return
        func = node.func
        is_print = isinstance(func, ast.Name) and func.id == "print"
        if ctx.call_name(node) in _SYNCHRONIZE:
            what = "torch.cuda.synchronize()"
        elif isinstance(func, ast.Attribute) and func.attr in _SYNCING and not node.args:
            if len(ctx.parents) > 1 and isinstance(ctx.parents[-1], ast.Attribute) \
                    and ctx.parents[-1].attr in _SYNCING and isinstance(ctx.parents[-2], ast.Call):
                return  # `x.cpu().numpy()`: one sync, reported once at the outer call
            what = dotted(node)
        elif is_print and node.args:
            what = "print(<tensor>)"
        else:
            return
        loop = ctx.loops[-1]
        # Inside an `if step % k == 0:` the sync is already rate-limited.
        if ctx.branches_since(loop, (ast.If,)):
            return
        backwards = self._backwards.get(id(loop))
        if backwards is None:
            backwards = self._backwards[id(loop)] = [c for c in ctx.body_calls(loop) if is_backward(c, ctx)]
        if not backwards:
            return
        if is_print:
            # A tensor: known from inference, or the very loss that backward() is called on.
            losses = {c.func.value.id for c in backwards if isinstance(c.func, ast.Attribute)
                      and isinstance(c.func.value, ast.Name)}
            if not any(inference.kind_of(a, ctx) in (inference.TENSOR, inference.PARAMETER)
                       or (isinstance(a, ast.Name) and a.id in losses) for a in node.args):
                return
        self.report(node, SyncEveryStep(call=what))
