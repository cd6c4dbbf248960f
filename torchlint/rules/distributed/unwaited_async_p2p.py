"""TL504: `dist.isend`/`dist.irecv` (or an `async_op=True` collective) whose work is never waited."""

from __future__ import annotations

import ast

from torchlint.checker import FileContext
from torchlint.rules.base import Evidence, Rule, Violation, literal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional

_DIST = "torch.distributed."
_ALWAYS_ASYNC = frozenset({"isend", "irecv", "batch_isend_irecv"})
# Collectives that return a work handle under `async_op=True` and touch a buffer (not `barrier`).
_COLLECTIVES = frozenset({
    "all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter",
    "reduce_scatter_tensor", "all_to_all", "all_to_all_single", "gather", "scatter",
})


def _expects_raise(node: ast.AST) -> bool:
    """`with self.assertRaises(...)` / `assertRaisesRegex` / `pytest.raises(...)`."""
    if not isinstance(node, (ast.With, ast.AsyncWith)):
        return False
    for item in node.items:
        call = item.context_expr
        func = call.func if isinstance(call, ast.Call) else None
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name.startswith("assertRaises") or name == "raises":
            return True
    return False


class UnwaitedWork(Violation):
    op: str  # `isend`, `irecv`, ...
    kept_in: Optional[str] = None  # the name that keeps the work, never waited; None: discarded
    help = "Keep the returned work and call `.wait()` before the tensor is used"

    def message(self) -> str:
        where = f"in `{self.kept_in[:20]}` is never waited" if self.kept_in is not None else "is discarded"
        return f"the work of `dist.{self.op}` {where}: the tensor may be used mid-transfer"


class UnwaitedAsyncP2p(Rule):
    """## What it does
    Flags `dist.isend(...)`, `dist.irecv(...)`, `dist.batch_isend_irecv(...)` and collectives
    called with `async_op=True` (`all_reduce`, `broadcast`, `all_gather`, ...) whose returned work
    is thrown away: the call is a statement of its own, or its result is assigned to a name
    that is never read afterwards in the function. A work that is stored in a list, returned,
    passed on or read in any way is not flagged, nor one assigned to `_` (discarded on purpose),
    nor a call inside `with self.assertRaises(...)`/`pytest.raises(...)` (it is expected to raise).

    ## Why is this bad?
    These calls only enqueue the transfer; the returned work's `.wait()` is what makes the
    tensor safe to use. Without it, a received buffer may be read before the data has arrived,
    a sent or reduced buffer may be overwritten while it is still in flight, and with NCCL the
    operation runs on another CUDA stream that the next kernels are not ordered after. The
    result is stale or partly updated values, which do not raise: they differ from run to run.

    `--verify` reports this rule as `skipped`: showing a race needs a process group of two or more
    processes, which the sandboxed worker does not start.

    ## Example
    ```python
    if rank == 0:
        dist.isend(tensor, dst=1)
    else:
        dist.irecv(tensor, src=0)
    print(tensor)
    ```

    ## Use instead
    ```python
    if rank == 0:
        req = dist.isend(tensor, dst=1)
    else:
        req = dist.irecv(tensor, src=0)
    req.wait()
    print(tensor)
    ```

    ## Fix safety
    No automatic fix: where to wait (right away, or after overlapping computation) is the point
    of the asynchronous call.

    ## References
    - [torch.distributed point-to-point communication](https://pytorch.org/docs/stable/distributed.html#point-to-point-communication)
    - [Synchronous and asynchronous collective operations](https://pytorch.org/docs/stable/distributed.html#synchronous-and-asynchronous-collective-operations)
    """

    code = "TL504"
    name = "unwaited-async-p2p"
    summary = "`dist.isend`/`irecv` or an `async_op=True` collective whose work is never `.wait()`ed"
    severity = "error"
    tags = ("correctness", "distributed")
    precision = "high"
    requires_text = ("isend", "irecv", "async_op")
    evidence = Evidence(reason="showing the race needs a process group of two or more processes, which the sandboxed worker does not start")

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        op = self._async_op(node, ctx)
        if op is None or ctx.any_ancestor("tl504-raises", _expects_raise):
            return  # a test that the call raises: no work is ever returned
        parent = ctx.parent
        if isinstance(parent, ast.Expr):
            kept_in = None
        elif isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name) \
                and parent.targets[0].id != "_" and parent.value is node \
                and not self._read_later(parent.targets[0].id, parent, ctx):
            kept_in = parent.targets[0].id
        else:
            return
        self.report(node, UnwaitedWork(op=op, kept_in=kept_in))

    def _async_op(self, node: ast.Call, ctx: FileContext) -> Optional[str]:
        name = ctx.call_name(node)
        if name is None or not name.startswith(_DIST):
            return None
        op = name[len(_DIST):]
        if op in _ALWAYS_ASYNC:
            return op
        if op in _COLLECTIVES and any(k.arg == "async_op" and literal(k.value) is True for k in node.keywords):
            return op
        return None

    def _read_later(self, name: str, assign: ast.Assign, ctx: FileContext) -> bool:
        """Is `name` read anywhere in this scope other than as the assignment's own target?
        (A read inside a loop may come from a later iteration, so any read counts.)"""
        scope = ctx.function if ctx.function is not None else ctx.tree
        for sub in ast.walk(scope):
            if isinstance(sub, ast.Name) and sub.id == name and isinstance(sub.ctx, ast.Load):
                return True
            if isinstance(sub, (ast.Global, ast.Nonlocal)) and name in sub.names:
                return True
        return False
