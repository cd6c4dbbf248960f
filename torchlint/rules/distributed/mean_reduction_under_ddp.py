"""TL501: a reduction='mean' loss under DistributedDataParallel where the number of
elements it averages over can differ between ranks."""

from __future__ import annotations

import ast
from collections import defaultdict



from torchlint.analysis.scopes import iter_scope
from torchlint.analysis.torch_api import DDP, MEAN_REDUCTION_FUNCTIONS, MEAN_REDUCTION_LOSSES
from torchlint.checker import FileContext
from torchlint.records import RuntimeResult
from torchlint.rules.base import Evidence, Rule, Violation, arg_or_keyword, keyword, literal
import torchlint.runtime.judging as run

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional
    from pathlib import Path


_LEGACY_REDUCTION_ARGS = ("size_average", "reduce")
# Losses whose mean divides by the number of targets that are not ignored (or by their weights).
_CLASS_INDEX = frozenset({"CrossEntropyLoss", "NLLLoss", "cross_entropy", "nll_loss"})
_DEFAULT_IGNORE_INDEX = -100
_FLATTENING = frozenset({"view", "reshape", "flatten"})
_PAD_WORDS = ("pad_sequence", "padding_value", "pad_token", "pad_id", "padding_idx", "pad_idx")


def _short(name: str) -> str:
    last = name.rsplit(".", 1)[1]
    return f"F.{last}" if name.startswith("torch.nn.functional.") else f"nn.{last}"


def _is_mean(call: ast.Call) -> bool:
    if any(kw.arg is None or kw.arg in _LEGACY_REDUCTION_ARGS for kw in call.keywords):
        return False
    reduction = keyword(call, "reduction")
    return reduction is None or literal(reduction.value) == "mean"


def _is_selection(expr: ast.AST) -> bool:
    """`out[mask]`, `x[idx]`, `x[y != pad]`, `x.masked_select(m)`: a data-dependent subset."""
    if isinstance(expr, ast.Subscript):
        index = expr.slice
        if isinstance(index, ast.Tuple):
            return any(_is_selection_index(e) for e in index.elts)
        return _is_selection_index(index)
    return isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) \
        and expr.func.attr in ("masked_select", "nonzero")


def _is_selection_index(index: ast.AST) -> bool:
    return isinstance(index, (ast.Name, ast.Compare, ast.Call, ast.BoolOp, ast.UnaryOp, ast.Attribute)) \
        and not (isinstance(index, ast.UnaryOp) and isinstance(index.operand, ast.Constant))


def _flattened(expr: ast.AST) -> bool:
    while isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
        if expr.func.attr in _FLATTENING:
            return True
        expr = expr.func.value
    return False


def _is_ignore_value(node: ast.AST) -> bool:
    return isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) \
        and isinstance(node.operand, ast.Constant) and node.operand.value == -_DEFAULT_IGNORE_INDEX


def _sets_ignore_value(scope: ast.AST) -> bool:
    """Labels overwritten with -100 (`y[pad] = -100`, `masked_fill(m, -100)`, `where(m, y, -100)`)."""
    body = scope.body if isinstance(scope.body, list) else [scope.body]  # type: ignore[attr-defined]
    for node in iter_scope(body):
        if isinstance(node, ast.Assign) and _is_ignore_value(node.value) \
                and any(isinstance(t, ast.Subscript) for t in node.targets):
            return True
        if isinstance(node, ast.Call) and any(_is_ignore_value(a) for a in node.args):
            func = node.func
            last = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if last in ("masked_fill", "masked_fill_", "fill_", "where", "full_like", "index_fill_"):
                return True
    return False


def run_verdict(obs: run.Observation, path: str, rows: tuple[int, int], cwd: Path) -> RuntimeResult:
    """What the run shows: per-rank counted elements and the weighting error."""
    calls = [e for e in obs.by_kind["loss"] if run.at(e["site"], path, rows) or run.at(e.get("module_site"), path, rows)]
    if not calls:
        return run.not_reached("the loss constructed or called here never ran")
    ranked = [e for e in calls if e.get("world", 1) > 1]
    if not ranked:
        return run.verdict("not-observed", f"ran {len(calls)} time(s) in processes without a process group of more "
                                           "than one rank, where the mean is the global mean", len(calls))
    distributed = [e for e in ranked if e.get("reduction") == "mean" and e.get("counted") is not None]
    if not distributed:
        errors = sorted({e["error"] for e in ranked if e.get("error")})
        why = f"the loss raised ({errors[0]})" if errors else "no call had reduction='mean' with countable targets"
        return run.verdict("not-observed", f"ran {len(ranked)} time(s) on {max(e['world'] for e in ranked)} ranks, but "
                                           f"{why}, so no per-rank counts could be compared", len(calls))
    by_rank: dict[int, list[int]] = defaultdict(list)
    for e in distributed:
        by_rank[e["rank"]].append(e["counted"])
    ranks = sorted(by_rank)
    common = min(len(v) for v in by_rank.values())
    for index in range(common):
        counts = [by_rank[r][index] for r in ranks]
        if len(set(counts)) > 1:
            total, world = sum(counts), len(ranks)
            parts = ", ".join(f"rank {r} counted {n}" for r, n in zip(ranks, counts))
            weight_errors = ", ".join(f"rank {r} {_weight_error(total, world, n)}" for r, n in zip(ranks, counts))
            return run.verdict("confirmed", f"call {index + 1}: {parts} (of {total}); DDP's mean of per-rank means "
                                            f"weights each element, relative to the global mean, by: {weight_errors}",
                               len(calls))
    sample = sorted({n for v in by_rank.values() for n in v})
    return run.verdict("not-observed", f"ran {len(distributed)} time(s) across {len(ranks)} ranks; every rank counted the "
                                       f"same number of elements at each call ({', '.join(map(str, sample[:5]))})",
                       len(calls))


def _weight_error(total: int, world: int, count: int) -> str:
    if count == 0:
        return "no elements (its mean is NaN or 0)"
    return f"{(total / (world * count) - 1) * 100:+.1f}%"


# -- evidence (runs only in the --verify worker: see CONTRIBUTING.md) ----------------------
def _ddp_rank(rank: int, world: int, store: str, out: str, ignore_index: int, kind: str = "ce") -> None:
    import os

    import torch
    import torch.distributed as dist
    import torch.nn as nn

    # Its own stderr file: what a crashed rank printed (a C++ abort's message) reaches the evidence.
    os.dup2(os.open(f"{store}.rank{rank}.err", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), 2)
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = nn.Linear(3, 4)
    ddp = nn.parallel.DistributedDataParallel(model)
    x, y = _ddp_batch(rank, ignore_index, kind)
    _ddp_loss(kind, ddp(x), y, ignore_index).backward()
    if rank == 0:
        torch.save(model.weight.grad.clone(), out)  # type: ignore[union-attr]
    dist.barrier()
    dist.destroy_process_group()


def _ddp_batch(rank: int, ignore_index: int, kind: str = "ce") -> tuple[Any, Any]:
    import torch

    g = torch.Generator().manual_seed(100 + rank)
    x = torch.randn(4, 3, generator=g)
    if kind == "mse":
        return x, torch.randn(4, 4, generator=g)  # every element counts: equal counts on every rank
    y = torch.randint(0, 4, (4,), generator=g)
    if rank == 1:
        y[1:] = ignore_index  # rank 1 counts 1 real target, rank 0 counts 4
    return x, y


def _ddp_loss(kind: str, out: Any, y: Any, ignore_index: int) -> Any:
    import torch.nn.functional as F

    if kind == "mse":
        return F.mse_loss(out, y)
    return F.cross_entropy(out, y, ignore_index=ignore_index)


# Losses that can leave targets out of the mean (ignore_index, zero weights): per-rank counts
# can differ even with equal batch sizes.
_MASKING_LOSSES = ("cross_entropy", "CrossEntropyLoss", "nll_loss", "NLLLoss")


def _no_loopback_tcp() -> bool:
    """Inside the --verify sandbox, TCP exists only in a private network namespace."""
    import os

    layers = os.environ.get("TORCHLINT_SANDBOX")
    return layers is not None and "net namespace" not in layers and "UNSANDBOXED" not in layers


def _ddp_gradient(ignore_index: int, kind: str) -> Any:
    """rank 0's weight gradient after one DDP step of 2 gloo ranks. Up to 3 tries: gloo's TCP
    setup can abort a rank on a busy machine (std::terminate from a connection the peer reset),
    which says nothing about the hazard; a rank that fails 3 times raises, with its stderr."""
    import os
    import tempfile

    import torch
    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "grad.pt")
        for attempt in range(3):
            store = os.path.join(tmp, f"store{attempt}")  # a file store serves one process group only
            try:
                # spawn, not fork: forking a process whose OpenMP/gloo threads are running can deadlock.
                mp.start_processes(_ddp_rank, args=(2, store, out, ignore_index, kind), nprocs=2, join=True,
                                   start_method="spawn")
                return torch.load(out, weights_only=True)
            except (mp.ProcessExitedException, mp.ProcessRaisedException) as exc:
                failure, printed = exc, _tail(f"{store}.rank{exc.error_index}.err")
        raise RuntimeError(f"{failure} in 3 tries; it printed: {printed or 'nothing'}")


def _tail(path: str) -> str:
    try:
        with open(path, "rb") as f:
            return f.read()[-600:].decode("utf-8", "replace").strip()
    except OSError:
        return ""


def probe_mean_under_ddp(params: dict, device: str) -> tuple[str, str]:
    import torch
    import torch.nn as nn

    if _no_loopback_tcp():
        return ("skipped", "the 2 gloo ranks need TCP on loopback, which the --verify sandbox allows only inside a "
                           "network namespace, and this kernel gives none (unprivileged user namespaces are off)")
    ignore_index = -100
    loss = str(params.get("loss", "F.cross_entropy"))
    how = "an explicit reduction='mean'" if params.get("explicit") else "the default reduction='mean'"
    kind = "ce" if any(name in loss for name in _MASKING_LOSSES) else "mse"
    ddp_grad = _ddp_gradient(ignore_index, kind)
    torch.manual_seed(0)
    model = nn.Linear(3, 4)
    xs, ys = zip(*(_ddp_batch(r, ignore_index, kind) for r in range(2)))
    _ddp_loss(kind, model(torch.cat(xs)), torch.cat(ys), ignore_index).backward()
    global_grad: Any = model.weight.grad
    diff = float((ddp_grad - global_grad).abs().max())
    if diff > 1e-5:
        return ("confirmed", f"{loss} with {how}, 2 gloo ranks whose targets are partly ignore_index (4 and 1 "
                             f"counted): DDP gradient[0,0]={ddp_grad[0, 0]:.5f}, global-mean gradient[0,0]="
                             f"{global_grad[0, 0]:.5f} (max diff {diff:.5f})")
    if kind == "mse":
        return ("not-reproduced", f"{loss} counts every element, so with equal batch sizes every rank counts the "
                                  f"same and DDP's mean of means equals the global mean (2 gloo ranks, max diff "
                                  f"{diff:.1e}); it differs only when ranks' batch sizes differ (an uneven last batch)")
    return "not-reproduced", f"DDP and global-mean gradients agree (max diff {diff:.2e})"


class MeanLossUnderDdp(Violation):
    loss: str  # as written, `F.cross_entropy`
    why: str  # what makes the counts differ between ranks
    help = "Use reduction='sum' and divide by the global count from `dist.all_reduce`"

    def message(self) -> str:
        return f"Mean `{self.loss}` under DDP: {self.why} makes per-rank counts differ"


class MeanReductionUnderDdp(Rule):
    """## What it does
    Flags a loss computed with `reduction='mean'` (explicitly or by default) in the same function
    that wraps a model in `DistributedDataParallel` (or at module level in a file that does so at
    module level), **only where the number of elements it averages over can differ between
    ranks**:

    - `ignore_index=` on `CrossEntropyLoss`/`NLLLoss`/`F.cross_entropy`/`F.nll_loss`;
    - class weights (`weight=`) on those losses (the mean divides by the summed weights);
    - labels overwritten with the default ignore value (`y[y == pad] = -100`, `masked_fill(m, -100)`)
      in the same function as a class-index loss;
    - masked or filtered selections passed to the loss (`crit(out[mask], y[mask])`);
    - per-token losses over flattened, padded sequences (`out.view(-1, V)` in a file that pads).

    A plain `nn.CrossEntropyLoss()` on fixed-size classification batches is not flagged: every
    rank counts the same number of elements (a padding `DistributedSampler` or `drop_last=True`
    keeps batch sizes equal), so the mean of per-rank means is the global mean.
    Losses in other functions of the file are not flagged.

    ## Why is this bad?
    Each rank averages its loss over its *own* elements, then DDP averages the gradients across
    ranks. The result is a mean of per-rank means. That equals the global mean only when every
    rank counts the same number of elements. With `ignore_index`/padding tokens, masks, or an
    uneven last batch, ranks with fewer elements get more weight per element than ranks with
    more, and the gradient is biased, silently. (It is not "averaged twice, gradients too
    small", as some articles say: with equal counts it is exactly right.)

    ## Example
    ```python
    model = DDP(model, device_ids=[rank])
    criterion = nn.CrossEntropyLoss(ignore_index=-100)
    loss = criterion(model(x), y)
    ```

    ## Use instead
    ```python
    criterion = nn.CrossEntropyLoss(ignore_index=-100, reduction="sum")
    n = (y != -100).sum()
    dist.all_reduce(n)                        # global element count
    loss = criterion(model(x), y) * dist.get_world_size() / n
    ```
    (multiplying by the world size undoes DDP's gradient averaging).

    ## Fix safety
    No automatic fix: the global count depends on how the batch is masked.

    ## References
    - [DistributedDataParallel](https://pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html)
    - [torch.distributed.all_reduce](https://pytorch.org/docs/stable/distributed.html#torch.distributed.all_reduce)
    """

    code = "TL501"
    name = "mean-reduction-under-ddp"
    summary = "reduction='mean' loss under DistributedDataParallel where per-rank element counts can differ"
    severity = "warning"
    tags = ("correctness", "distributed", "loss")
    requires_text = ('DistributedDataParallel',)
    precision = "medium"
    evidence = Evidence(probe=probe_mean_under_ddp, runtime=run_verdict)

    def setup(self, ctx: FileContext) -> None:
        self.ddp_scopes: set[int] = set()
        self.candidates: list[tuple[int, ast.Call, str, str]] = []  # scope, call, loss, why counts differ
        self._ignore_value_set: dict[int, bool] = {}
        self._padded = any(word in ctx.source.text for word in _PAD_WORDS)

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        name = ctx.call_name(node)
        if name == DDP:
            self.ddp_scopes.add(id(ctx.scope))
            return
        if ctx.grad_disabled():
            return  # no gradients flow from here: a metric, not a training loss
        if name is not None and name.startswith("torch.nn."):
            short = name.rsplit(".", 1)[1]
            if name == f"torch.nn.{short}" and short in MEAN_REDUCTION_LOSSES and _is_mean(node):
                why = self._constructor_reason(node, short)
                if why:
                    self.candidates.append((id(ctx.scope), node, _short(name), why))
            elif name.startswith("torch.nn.functional.") and short in MEAN_REDUCTION_FUNCTIONS and _is_mean(node):
                why = self._constructor_reason(node, short) or self._call_reason(node, short, ctx)
                if why:
                    self.candidates.append((id(ctx.scope), node, _short(name), why))
            return
        # A call of a loss object built in this scope: `criterion(out[mask], y[mask])`.
        if name is None and isinstance(node.func, ast.Name) and node.args:
            ctor = ctx.value_before(node.func, node.lineno, module_fallback=True)
            ctor_name = ctx.call_name(ctor) if isinstance(ctor, ast.Call) else None
            if ctor_name is None or not ctor_name.startswith("torch.nn."):
                return
            short = ctor_name.rsplit(".", 1)[1]
            if short in MEAN_REDUCTION_LOSSES and _is_mean(ctor) and not self._constructor_reason(ctor, short):  # type: ignore[arg-type]
                why = self._call_reason(node, short, ctx)
                if why:
                    self.candidates.append((id(ctx.scope), node, _short(ctor_name), why))

    @staticmethod
    def _constructor_reason(call: ast.Call, short: str) -> Optional[str]:
        if short in _CLASS_INDEX:
            ignore = keyword(call, "ignore_index")
            if ignore is not None:
                return "ignore_index"
            if keyword(call, "weight") is not None or (short in ("CrossEntropyLoss", "NLLLoss") and call.args):
                return "class weights"
        return None

    def _call_reason(self, call: ast.Call, short: str, ctx: FileContext) -> Optional[str]:
        inputs = [a for a in (arg_or_keyword(call, 0, "input"), arg_or_keyword(call, 1, "target")) if a is not None]
        for arg in inputs:
            value = ctx.value_before(arg, call.lineno) if isinstance(arg, ast.Name) else arg
            if value is not None and _is_selection(value):
                return "a masked selection"
            if value is not None and self._padded and _flattened(value):
                return "padded per-token targets"
        if short in _CLASS_INDEX:
            scope = ctx.scope
            if id(scope) not in self._ignore_value_set:
                self._ignore_value_set[id(scope)] = _sets_ignore_value(scope)
            if self._ignore_value_set[id(scope)]:
                return "labels set to -100"
        return None

    def end_file(self, ctx: FileContext) -> None:
        for scope, call, display, why in self.candidates:
            if scope in self.ddp_scopes:
                self.report(call, MeanLossUnderDdp(loss=display, why=why),
                            params={"loss": display, "explicit": keyword(call, "reduction") is not None})
