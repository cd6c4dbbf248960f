# torchlint: noqa  (every probe reproduces a hazard on purpose)
"""Fact probes: small experiments built only from the facts a rule read from the flagged
code (`params`), for findings whose code cannot run in isolation (slices.py runs the user's
own code when it can).

This module runs only inside the probe worker (`_worker.py`, started with `python -I`),
never in the linting process. Each probe takes the facts and a device, and returns
(verdict, evidence):

- "confirmed": the probe showed the hazard; the worker reports it as `demonstrated`
  (a probe is not the user's code) and prefixes the evidence with "probe";
- "not-reproduced": with these facts, on this torch/device, the pattern is harmless;
- "not-applicable": this torch no longer has the hazard (TL601's default after torch 2.6);
- "skipped": the probe cannot show it on this device.

An exception escaping a probe is reported as "error" by the worker. User source is never
executed here."""

from __future__ import annotations

import inspect
import io
import os
import pickle
import random
import sys
import tempfile
import warnings
from typing import Any, Callable

import evidence_index  # next to this file in the worker's sys.path (generated)
import torch
import torch.nn as nn
import torch.nn.functional as F

Result = tuple[str, str]
def _raises(fn: Callable[[], Any]) -> BaseException | None:
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the exception is the evidence
        return exc
    return None


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    text = text.split(" Hint:")[0]
    return f"{type(exc).__name__}: {text[:160]}"


DTYPES = {"torch.float32": torch.float32, "torch.float64": torch.float64,
          "torch.float16": torch.float16, "torch.bfloat16": torch.bfloat16}


# -- autograd ----------------------------------------------------------------------
def backward_under_no_grad(params: dict, device: str) -> Result:
    mode = params.get("mode", "torch.no_grad")
    ctx = {"torch.no_grad": torch.no_grad, "torch.inference_mode": torch.inference_mode,
           "torch.set_grad_enabled": lambda: torch.set_grad_enabled(False)}.get(mode, torch.no_grad)
    model = nn.Linear(4, 2).to(device)
    x = torch.randn(3, 4, device=device)
    call = params.get("call", "backward")

    def run() -> None:
        with ctx():
            loss = model(x).sum()
            if call.endswith("autograd.grad"):
                torch.autograd.grad(loss, list(model.parameters()))
            else:
                loss.backward()
    exc = _raises(run)
    if exc is not None and "does not require grad" in str(exc):
        return "confirmed", first_line(exc)
    return "not-reproduced", f"{call} inside {mode} did not raise ({exc!r})"


def data_attribute_mutation(params: dict, device: str) -> Result:
    def grad_after(mutate: Callable[[torch.Tensor], None]) -> torch.Tensor:
        w = torch.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
        loss = (w * w).sum()  # saves w for backward: d/dw = 2w
        mutate(w)
        loss.backward()
        return w.grad.detach().cpu()

    true_grad = grad_after(lambda w: None)
    wrong = grad_after(lambda w: w.data.mul_(10.0))
    exc = _raises(lambda: grad_after(lambda w: _no_grad_mul(w)))
    guarded = f"; the same write under no_grad raises {first_line(exc)}" if exc else ""
    op = str(params.get("op", "mul_"))
    if not torch.allclose(true_grad, wrong):
        return ("confirmed", f"a write through .data (here `{op}`) after the forward pass: with `w.data.mul_(10)` "
                             f"the gradient of sum(w*w) is {wrong.tolist()}, the true gradient is {true_grad.tolist()}"
                             f"{guarded}; a write before the forward pass is harmless")
    return "not-reproduced", f"gradient unchanged by the .data write ({wrong.tolist()})"


def _no_grad_mul(w: torch.Tensor) -> None:
    with torch.no_grad():
        w.mul_(10.0)


def missing_zero_grad(params: dict, device: str) -> Result:
    torch.manual_seed(0)
    model = nn.Linear(2, 1, bias=False).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.0)  # lr 0: the weights stay, grads show accumulation
    x = torch.ones(1, 2, device=device)
    for _ in range(3):
        model(x).sum().backward()
        opt.step()
    accumulated = model.weight.grad.detach().cpu().flatten().tolist()
    single = x.sum(0).cpu().tolist()
    if accumulated != single:
        return "confirmed", f"after 3 steps .grad is {accumulated}; one step's gradient is {single}"
    return "not-reproduced", f".grad after 3 steps is {accumulated}"


def zero_grad_between(params: dict, device: str) -> Result:
    model = nn.Linear(2, 1).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    before = model.weight.detach().clone()
    model(torch.ones(1, 2, device=device)).sum().backward()
    opt.zero_grad()
    opt.step()
    if torch.equal(before, model.weight.detach()):
        return "confirmed", f"step() after zero_grad() left the weights unchanged ({before.cpu().flatten().tolist()})"
    return "not-reproduced", "the weights changed"


def leaf_inplace(params: dict, device: str) -> Result:
    w = torch.randn(3, device=device, requires_grad=True)
    exc = _raises(lambda: w.sub_(0.1))
    if exc is not None and "leaf Variable" in str(exc):
        return "confirmed", first_line(exc)
    return "not-reproduced", f"in-place update of a leaf did not raise ({exc!r})"


def integer_requires_grad(params: dict, device: str) -> Result:
    exc = _raises(lambda: torch.tensor([1, 2, 3], device=device, requires_grad=True))
    if exc is not None and "floating point" in str(exc):
        return "confirmed", first_line(exc)
    return "not-reproduced", f"no error ({exc!r})"


def loss_accumulated(params: dict, device: str) -> Result:
    model = nn.Linear(4, 1).to(device)
    total: Any = 0
    for _ in range(5):
        loss = model(torch.randn(2, 4, device=device)).sum()
        loss.backward()
        total += loss
    nodes = _count_graph(total.grad_fn) if isinstance(total, torch.Tensor) else 0
    if nodes:
        return ("confirmed", f"after 5 steps the accumulator still references {nodes} autograd nodes "
                             f"(grad_fn {type(total.grad_fn).__name__}); with .item() it holds none")
    return "not-reproduced", "the accumulator holds no graph"


def _count_graph(fn: Any) -> int:
    seen, stack = set(), [fn]
    while stack:
        f = stack.pop()
        if f is None or id(f) in seen:
            continue
        seen.add(id(f))
        stack.extend(n for n, _ in getattr(f, "next_functions", ()))
    return len(seen)


def grad_mode_not_called(params: dict, device: str) -> Result:
    cls = getattr(torch, params.get("mode", "no_grad"), torch.no_grad)

    def run() -> None:
        with cls:  # type: ignore[attr-defined]
            pass
    exc = _raises(run)
    if isinstance(exc, (TypeError, AttributeError)):
        return "confirmed", first_line(exc)
    return "not-reproduced", "the class worked as a context manager"


def requires_grad_typo(params: dict, device: str) -> Result:
    x = torch.zeros(3, device=device)
    x.require_grad = True  # type: ignore[attr-defined]
    exc = _raises(lambda: torch.ones(3, require_grad=True))  # type: ignore[call-arg]
    if not x.requires_grad:
        kw = f"; as a keyword: {first_line(exc)}" if exc else ""
        return "confirmed", f"after `x.require_grad = True`, x.requires_grad is {x.requires_grad}{kw}"
    return "not-reproduced", "requires_grad was set"


# -- dtype and device -------------------------------------------------------------
def label_float_cast(params: dict, device: str) -> Result:
    dtype = DTYPES.get(params.get("dtype", "torch.float32"), torch.float32)
    loss_name = params.get("loss", "F.cross_entropy")
    logits = torch.randn(4, 3, device=device)
    labels = torch.tensor([0, 2, 1, 2], device=device)
    if "nll" in loss_name.lower():
        fn: Callable = lambda inp, t: F.nll_loss(F.log_softmax(inp, dim=1), t)  # noqa: E731
    else:
        fn = F.cross_entropy
    exc = _raises(lambda: fn(logits.to(dtype) if dtype != torch.float64 else logits.double(), labels.to(dtype)))
    big = 2**24 + 1
    back = int(torch.tensor([big]).to(torch.float32).long().item())
    precision = f"; label {big} comes back as {back} after float32" if back != big else ""
    if exc is not None and "dtype" in str(exc).lower() or exc is not None and "Long" in str(exc):
        return "confirmed", f"{loss_name} with {dtype} targets: {first_line(exc)}{precision}"
    return "not-reproduced", f"{loss_name} accepted {dtype} class-index targets{precision}"


def discarded_conversion(params: dict, device: str) -> Result:
    method = str(params.get("method", "float"))
    x = torch.arange(6, device=device).reshape(2, 3).t()
    before = (x.dtype, x.device, x.is_contiguous())
    if method in ("cuda", "pin_memory") and not torch.cuda.is_available():
        return "skipped", f"`.{method}()` needs a CUDA device, and this run has none"
    calls = {"to": ("x.to(torch.float64)", lambda: x.to(torch.float64)),
             "type": ("x.type(torch.float64)", lambda: x.type(torch.float64)),
             "cuda": ("x.cuda()", lambda: x.cuda()), "cpu": ("x.cpu()", lambda: x.cpu())}
    shown, call = calls.get(method, (f"x.{method}()", lambda: getattr(x, method)()))
    result = call()
    after = (x.dtype, x.device, x.is_contiguous())
    if result is x:
        return "not-reproduced", f"on {device} `{shown}` returns x itself: nothing is lost by discarding it"
    if before == after:
        return ("confirmed", f"`{shown}` on a {x.dtype} tensor returned a new tensor ({result.dtype}, {result.device}); "
                             f"x is still {x.dtype} on {x.device}, contiguous={x.is_contiguous()}")
    return "not-reproduced", "the receiver changed in place"


def chained_conversion(params: dict, device: str) -> Result:
    x = torch.randint(0, 10, (256, 256), device=device)
    chained = count_copies(lambda: x.float().to(torch.float64))
    single = count_copies(lambda: x.to(torch.float64))
    if chained > single:
        return "confirmed", f"the chained form ran {chained} copy kernels, one `.to(...)` ran {single}"
    return "not-reproduced", f"{chained} vs {single} copy kernels"


def count_copies(fn: Callable[[], Any]) -> int:
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    return sum(1 for e in prof.events() if e.name == "aten::_to_copy")


def float64_from_numpy(params: dict, device: str) -> Result:
    import numpy as np
    source = str(params.get("source", "np.random.rand"))
    makers = {"np.random.rand": lambda: np.random.rand(4, 3), "np.random.randn": lambda: np.random.randn(4, 3),
              "np.zeros": lambda: np.zeros((4, 3)), "np.ones": lambda: np.ones((4, 3)),
              "np.empty": lambda: np.empty((4, 3)), "np.linspace": lambda: np.linspace(0, 1, 12).reshape(4, 3),
              "np.random.random": lambda: np.random.random((4, 3)), "np.random.uniform": lambda: np.random.uniform(size=(4, 3)),
              "np.random.normal": lambda: np.random.normal(size=(4, 3)), "np.full": lambda: np.full((4, 3), 0.5),
              "np.array": lambda: np.array([[0.5] * 3] * 4), "np.asarray": lambda: np.asarray([[0.5] * 3] * 4)}
    shown = source if source in makers else "np.random.rand"
    t = torch.from_numpy(makers.get(source, makers["np.random.rand"])())
    converter = str(params.get("converter", "torch.from_numpy"))
    layer = nn.Linear(3, 2).to(device)
    exc = _raises(lambda: layer(t.to(device)))
    extra = f"; against float32 weights: {first_line(exc)}" if exc else ""
    if t.dtype == torch.float64:
        return "confirmed", f"`{shown}(...)` with default dtype, converted by {converter}, gives a {t.dtype} tensor{extra}"
    return "not-reproduced", f"dtype {t.dtype}"


def legacy_constructor(params: dict, device: str) -> Result:
    # The constructor the flagged code calls (torch.cuda.* types are tried as their CPU twin).
    name = str(params.get("constructor", "torch.Tensor")).replace("torch.cuda.", "torch.")
    ctor = getattr(torch, name.split(".")[-1], None)
    if not (isinstance(ctor, type) and name.split(".")[-1].endswith("Tensor")):
        name, ctor = "torch.Tensor", torch.Tensor
    t = ctor(3)
    if tuple(t.shape) == (3,):
        return ("confirmed", f"`{name}(3)` with an int argument has shape (3,) and uninitialised values ({t.dtype}), "
                             f"not the value 3; with a list of values it holds those values")
    return "not-reproduced", f"shape {tuple(t.shape)}"


def unregistered_tensor(params: dict, device: str) -> Result:
    class M(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(2, 2)
            self.mask = torch.ones(2)

    m = M()
    target = torch.device(device) if device != "cpu" else torch.float64
    m.to(target)
    moved = m.fc.weight.device if device != "cpu" else m.fc.weight.dtype
    stayed = m.mask.device if device != "cpu" else m.mask.dtype
    missing = "mask" not in m.state_dict()
    if moved != stayed or missing:
        return ("confirmed", f"after .to({target}) the parameters are {moved} but the attribute is {stayed}; "
                             f"'mask' in state_dict(): {not missing}")
    return "not-reproduced", "the attribute followed the module"


# -- data loading -------------------------------------------------------------------
class _RngDataset(torch.utils.data.Dataset):
    def __init__(self, kind: str) -> None:
        self.kind = kind
        import numpy as np
        self.rng: Any = {
            "np.random.default_rng": lambda: np.random.default_rng(0),
            "np.random.RandomState": lambda: np.random.RandomState(0),
            "np.random.Generator": lambda: np.random.Generator(np.random.PCG64(0)),
            "random.Random": lambda: random.Random(0),
            "torch.Generator": lambda: torch.Generator().manual_seed(0),
        }.get(kind, lambda: None)()

    def __len__(self) -> int:
        return 8

    def __getitem__(self, idx: int) -> float:
        import numpy as np
        if self.kind == "global-numpy":
            return float(np.random.rand())
        if self.kind == "torch.Generator":
            return float(torch.rand(1, generator=self.rng).item())
        if self.kind == "random.Random":
            return self.rng.random()
        return float(self.rng.random())


def _worker_streams(kind: str, workers: int) -> dict[int, list[float]]:
    loader = torch.utils.data.DataLoader(_RngDataset(kind), batch_size=2, num_workers=workers,
                                         multiprocessing_context="fork" if sys.platform.startswith("linux") else None)
    streams: dict[int, list[float]] = {}
    for i, batch in enumerate(loader):
        streams.setdefault(i % workers, []).extend(round(float(v), 8) for v in batch)
    return streams


def worker_rng(params: dict, device: str) -> Result:
    kind = params.get("rng", "np.random.default_rng")
    workers = params.get("num_workers", 2)
    workers = min(workers, 4) if isinstance(workers, int) and not isinstance(workers, bool) else 2
    if workers < 2:
        return "not-reproduced", f"with num_workers={workers} there is no second worker to repeat the stream"
    streams = _worker_streams(kind, workers)
    values = list(streams.values())
    if len(values) == workers and all(v == values[0] for v in values[1:]):
        return "confirmed", f"{workers} workers drew identical streams from {kind}: {values[0][:2]}..."
    return "not-reproduced", f"{workers} workers drew different streams from {kind}: " + \
        ", ".join(str(v[:2]) for v in values)


def main_guard(params: dict, device: str) -> Result:
    import subprocess
    # The start method the flagged code pins (the loader's context, else the module's
    # set_start_method); unpinned, spawn: the default on macOS and Windows.
    pinned = params.get("context") or params.get("start_method")
    method = pinned if pinned in ("fork", "spawn", "forkserver") else "spawn"
    if method == "fork" and not sys.platform.startswith("linux"):
        return "skipped", "the code pins the fork start method, which this platform does not offer safely"
    script = (
        "from torch.utils.data import DataLoader\n"
        f"for _ in DataLoader(list(range(4)), num_workers=1, multiprocessing_context={method!r}):\n    pass\n"
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "unguarded.py")
        with open(path, "w") as fh:
            fh.write(script)
        proc = subprocess.run([sys.executable, "-I", path], capture_output=True, text=True, timeout=120, cwd=tmp)
    how = f"the {method} start method, which the code pins" if pinned else f"the {method} start method (the default " \
        "on macOS and Windows; the code pins none)"
    if "bootstrapping phase" in proc.stderr:
        return "confirmed", f"an unguarded module-level loop over a multi-worker DataLoader, with {how}: " \
                            "RuntimeError: An attempt has been made to start a new process before the current " \
                            "process has finished its bootstrapping phase"
    if proc.returncode == 0:
        return "not-reproduced", f"an unguarded module-level loop over a multi-worker DataLoader ran (exit 0) " \
                                 f"with {how}: forked workers do not re-import the main module"
    raise RuntimeError(f"the unguarded script exited {proc.returncode}: {proc.stderr.strip()[-300:]}")


def dataloader_in_loop(params: dict, device: str) -> Result:
    import multiprocessing
    code_workers = params.get("num_workers")
    workers = min(code_workers, 2) if type(code_workers) is int and code_workers > 0 else 2
    shown = f"num_workers={workers}" + (f" (the code's {code_workers}, capped)" if code_workers != workers and
                                        type(code_workers) is int else "")
    iterations = params.get("iterations")
    known = type(iterations) is int and iterations >= 0
    rounds = min(iterations, 3) if known else 3
    counter = multiprocessing.get_context("fork").Value("i", 0) if sys.platform.startswith("linux") else None
    if counter is None:
        return "skipped", "counting worker starts needs the fork start method"

    def init(_: int) -> None:
        with counter.get_lock():
            counter.value += 1

    data = list(range(8))
    for _ in range(rounds):
        for _ in torch.utils.data.DataLoader(data, num_workers=workers, worker_init_fn=init,
                                             multiprocessing_context="fork"):
            pass
    in_loop = counter.value
    counter.value = 0
    loader = torch.utils.data.DataLoader(data, num_workers=workers, worker_init_fn=init, persistent_workers=True,
                                         multiprocessing_context="fork")
    for _ in range(rounds):
        for _ in loader:
            pass
    once = counter.value
    del loader
    runs = "the loop's iterations (how many is not known here)"
    if known:
        runs = {0: "the loop, which runs 0 times,", 1: "the loop's single iteration"}.get(
            iterations, f"the loop's {iterations} iterations")
    if in_loop > once:
        return ("confirmed", f"{rounds} of {runs} with {shown} started {in_loop} worker processes; "
                             f"one persistent loader built before the loop started {once}")
    return ("not-reproduced", f"{runs} with {shown} started {in_loop} worker processes, no more than one loader "
                              f"built before the loop ({once}): a loop that runs once restarts nothing")


def conflicting_sampler(params: dict, device: str) -> Result:
    data = list(range(8))
    sampler = torch.utils.data.RandomSampler(data)
    if params.get("conflict") == "batch_sampler":
        bs = torch.utils.data.BatchSampler(sampler, 2, False)
        exc = _raises(lambda: torch.utils.data.DataLoader(data, batch_size=4, batch_sampler=bs))
    else:
        exc = _raises(lambda: torch.utils.data.DataLoader(data, shuffle=True, sampler=sampler))
    if isinstance(exc, ValueError):
        return "confirmed", first_line(exc)
    return "not-reproduced", f"no error ({exc!r})"


# -- losses -------------------------------------------------------------------------
def softmax_before_ce(params: dict, device: str) -> Result:
    act = params.get("activation", "softmax")
    loss_name = str(params.get("loss", "F.cross_entropy"))
    if "nll" in loss_name.lower():
        z = torch.tensor([[8.0, 0.0, 0.0]], device=device)
        y = torch.tensor([0], device=device)
        applied = {"softmax": torch.softmax, "sigmoid": lambda t, dim: torch.sigmoid(t)}.get(act, torch.log_softmax)
        wrong = F.nll_loss(applied(z, dim=1), y)
        right = F.nll_loss(torch.log_softmax(z, dim=1), y)
        if abs(wrong.item() - right.item()) > 1e-3:
            return ("confirmed", f"for a confident correct prediction {loss_name} gives {wrong.item():.4f} on {act} "
                                 f"output, {right.item():.4f} on log_softmax output")
        return "not-reproduced", f"{loss_name} gives {wrong.item():.4f} either way"
    if act == "sigmoid":
        z = torch.tensor([6.0, -6.0], device=device, requires_grad=True)
        y = torch.tensor([1.0, 0.0], device=device)
        right = F.binary_cross_entropy_with_logits(z, y)
        wrong = F.binary_cross_entropy_with_logits(torch.sigmoid(z), y)
    else:
        z = torch.tensor([[8.0, 0.0, 0.0]], device=device, requires_grad=True)
        y = torch.tensor([0], device=device)
        right = F.cross_entropy(z, y)
        wrong = F.cross_entropy(torch.softmax(z, dim=1), y) if act == "softmax" else F.cross_entropy(
            torch.log_softmax(z, dim=1), y)
    if act == "log_softmax":
        return "not-reproduced", f"log_softmax twice is idempotent: loss {wrong.item():.4f} == {right.item():.4f}"
    if abs(wrong.item() - right.item()) > 1e-3:
        return ("confirmed", f"for a confident correct prediction the loss is {wrong.item():.4f} with {act} "
                             f"first, {right.item():.4f} on the logits")
    return "not-reproduced", "losses agree"


def functional_dropout(params: dict, device: str) -> Result:
    # An input shape each functional dropout accepts (dropout1d wants 2-D or 3-D, and so on).
    shapes = {"dropout": (1000,), "alpha_dropout": (1000,), "dropout1d": (10, 100, 1),
              "dropout2d": (10, 100, 1, 1), "dropout3d": (10, 100, 1, 1, 1), "feature_alpha_dropout": (10, 100, 1)}
    name = str(params.get("function", "dropout"))
    name = name if name in shapes else "dropout"
    fn = getattr(F, name)
    p = params.get("p", 0.5)
    p = min(max(float(p), 0.0), 1.0) if type(p) in (int, float) else 0.5
    shown = f"F.{name}(x, p={p:g})"

    class M(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return fn(x, p)

    m = M().eval()
    torch.manual_seed(0)
    x = torch.ones(shapes[name], device=device)
    out = m(x)
    changed = int((out != x).sum())
    if changed:
        zeroed = int((out == 0).sum())
        return "confirmed", (f"in eval() mode `{shown}` on {x.numel()} ones still zeroed {zeroed} and changed "
                             f"{changed} in all (the survivors are scaled by 1/(1-p))")
    default = inspect.signature(fn).parameters["training"].default
    why = f"F.{name} defaults to training={default}" if default is False else f"p={p:g} drops nothing"
    return "not-reproduced", f"in eval() mode `{shown}` left all {x.numel()} activations unchanged: {why}"


def implicit_softmax_dim(params: dict, device: str) -> Result:
    x = torch.randn(2, 3, 4, device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the deprecation warning is not the evidence here
        p = F.softmax(x)
        flat = F.softmax(torch.randn(2, 3, device=device))
    sums = p.sum(dim=0)
    rows_ok = torch.allclose(flat.sum(dim=-1), torch.ones(2, device=device))
    if torch.allclose(sums, torch.ones_like(sums)):
        return ("confirmed", "the input's rank is unknown here: on a 3-D input the implicit dim is 0, so probabilities "
                             "sum to 1 across the batch; on a 1-D or 2-D input it is the last dim "
                             f"({'harmless' if rows_ok else 'not the last dim'})")
    return "not-reproduced", "softmax normalised the last dimension"


# -- distributed ---------------------------------------------------------------------
def _ddp_rank(rank: int, world: int, store: str, out: str, ignore_index: int, kind: str = "ce") -> None:
    import torch.distributed as dist
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = nn.Linear(3, 4)
    ddp = nn.parallel.DistributedDataParallel(model)
    x, y = _ddp_batch(rank, ignore_index, kind)
    _ddp_loss(kind, ddp(x), y, ignore_index).backward()
    if rank == 0:
        torch.save(model.weight.grad.clone(), out)
    dist.barrier()
    dist.destroy_process_group()


def _ddp_batch(rank: int, ignore_index: int, kind: str = "ce") -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(100 + rank)
    x = torch.randn(4, 3, generator=g)
    if kind == "mse":
        return x, torch.randn(4, 4, generator=g)  # every element counts: equal counts on every rank
    y = torch.randint(0, 4, (4,), generator=g)
    if rank == 1:
        y[1:] = ignore_index  # rank 1 counts 1 real target, rank 0 counts 4
    return x, y


def _ddp_loss(kind: str, out: torch.Tensor, y: torch.Tensor, ignore_index: int) -> torch.Tensor:
    if kind == "mse":
        return F.mse_loss(out, y)
    return F.cross_entropy(out, y, ignore_index=ignore_index)


# Losses that can leave targets out of the mean (ignore_index, zero weights): per-rank counts
# can differ even with equal batch sizes.
_MASKING_LOSSES = ("cross_entropy", "CrossEntropyLoss", "nll_loss", "NLLLoss")


def _no_loopback_tcp() -> bool:
    """Inside the --verify sandbox, TCP exists only in a private network namespace."""
    layers = os.environ.get("TORCHLINT_SANDBOX")
    return layers is not None and "net namespace" not in layers and "UNSANDBOXED" not in layers


def mean_under_ddp(params: dict, device: str) -> Result:
    import torch.multiprocessing as mp
    if _no_loopback_tcp():
        return ("skipped", "the 2 gloo ranks need TCP on loopback, which the --verify sandbox allows only inside a "
                           "network namespace, and this kernel gives none (unprivileged user namespaces are off)")
    ignore_index = -100
    loss = str(params.get("loss", "F.cross_entropy"))
    how = "an explicit reduction='mean'" if params.get("explicit") else "the default reduction='mean'"
    kind = "ce" if any(name in loss for name in _MASKING_LOSSES) else "mse"
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "grad.pt")
        # spawn, not fork: forking a process whose OpenMP/gloo threads are running can deadlock.
        mp.start_processes(_ddp_rank, args=(2, os.path.join(tmp, "store"), out, ignore_index, kind), nprocs=2,
                           join=True, start_method="spawn")
        ddp_grad = torch.load(out, weights_only=True)
    torch.manual_seed(0)
    model = nn.Linear(3, 4)
    xs, ys = zip(*(_ddp_batch(r, ignore_index, kind) for r in range(2)))
    _ddp_loss(kind, model(torch.cat(xs)), torch.cat(ys), ignore_index).backward()
    global_grad = model.weight.grad
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


def sampler_set_epoch(params: dict, device: str) -> Result:
    data = list(range(16))
    per_epoch = params.get("seed_per_epoch") is True

    def sampler(epoch: int) -> torch.utils.data.DistributedSampler:
        # Built once (seed 0), or, as the flagged code does, in the epoch loop with the epoch as its seed.
        return torch.utils.data.DistributedSampler(data, num_replicas=2, rank=0, shuffle=True,
                                                   seed=epoch if per_epoch else 0)

    once = sampler(0)
    first, second = (list(sampler(e)) for e in (0, 1)) if per_epoch else (list(once), list(once))
    if first == second:
        fresh = sampler(0)
        fresh.set_epoch(1)
        return ("confirmed", f"epochs 0 and 1 without set_epoch both yield {first[:4]}... (rank 0 of 2); "
                             f"after set_epoch(1): {list(fresh)[:4]}...")
    return ("not-reproduced", f"the sampler is rebuilt each epoch with the epoch as its seed: epochs 0 and 1 yield "
                              f"{first[:4]}... and {second[:4]}... (rank 0 of 2) without set_epoch")


# -- serialization -------------------------------------------------------------------
class _Payload:
    def __reduce__(self) -> tuple:
        return (os.getpid, ())  # harmless callable; proves code runs during unpickling


def unsafe_load(params: dict, device: str) -> Result:
    buf = io.BytesIO()
    torch.save({"weights": torch.ones(1), "payload": _Payload()}, buf, pickle_protocol=pickle.HIGHEST_PROTOCOL)
    buf.seek(0)
    loaded = torch.load(buf, weights_only=False)
    ran = loaded["payload"] == os.getpid()
    buf.seek(0)
    default = _raises(lambda: torch.load(buf))
    if params.get("explicit_false", True):
        if ran:
            return ("confirmed", "torch.load(weights_only=False) called a pickled callable (os.getpid) while loading"
                    + (f"; the default load refuses it: {first_line(default)}" if default else ""))
        return "not-reproduced", "torch.load(weights_only=False) did not run the pickled callable"
    if default is None:
        return "confirmed", "the default torch.load (weights_only unset) ran a pickled callable while loading"
    return ("not-applicable", f"on torch {torch.__version__} an unset weights_only means weights_only=True: the "
                              f"pickled callable was refused ({first_line(default)}); a state_dict loads safely")


# -- module structure ----------------------------------------------------------------
def plain_container(params: dict, device: str) -> Result:
    class M(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = [nn.Linear(2, 2), nn.Linear(2, 2)]

    n = len(list(M().parameters()))
    if n == 0:
        return "confirmed", "parameters() of a module holding 2 nn.Linear in a list yields 0 tensors"
    return "not-reproduced", f"parameters() yields {n} tensors"


def missing_super(params: dict, device: str) -> Result:
    class M(nn.Module):
        def __init__(self) -> None:
            self.fc = nn.Linear(2, 2)

    exc = _raises(M)
    if exc is not None:
        return "confirmed", first_line(exc)
    return "not-reproduced", "no error"


def forward_directly(params: dict, device: str) -> Result:
    m = nn.Linear(2, 2).to(device)
    calls: list[int] = []
    m.register_forward_hook(lambda *a: calls.append(1))
    x = torch.ones(1, 2, device=device)
    m.forward(x)
    direct = len(calls)
    m(x)
    if direct == 0 and len(calls) == 1:
        return "confirmed", "a registered forward hook ran for module(x) but not for module.forward(x)"
    return "not-reproduced", f"hook calls: {direct} direct, {len(calls) - direct} via __call__"


def train_mode(params: dict, device: str) -> Result:
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    modes = []
    for _ in range(2):
        modes.append(model.training)
        model(torch.randn(2, 4, device=device)).sum().backward()
        opt.step()
        model.eval()
    if modes == [True, False]:
        return "confirmed", "the second epoch ran its backward pass with model.training == False (dropout off)"
    return "not-reproduced", f"training flags per epoch: {modes}"


# -- performance and mixed precision -------------------------------------------------
def create_then_move(params: dict, device: str) -> Result:
    # The rule never flags a move to "cpu" (nothing is copied); `target` names the device the
    # code spells, when it does.
    target = params.get("target")
    if device == "cpu":  # absent hardware is no evidence either way
        return "skipped", (f"needs CUDA: the move to {target or 'the device'!r} costs a host-to-device copy only "
                           f"when the target is a GPU, and this run has none")
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        torch.zeros(1024, 1024).to(device)
        torch.cuda.synchronize()
    moved = sum(1 for e in prof.events() if "Memcpy HtoD" in e.name or e.name == "aten::copy_")
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        torch.zeros(1024, 1024, device=device)
        torch.cuda.synchronize()
    direct = sum(1 for e in prof.events() if "Memcpy HtoD" in e.name or e.name == "aten::copy_")
    if moved > direct:
        return "confirmed", f"create-then-move ran {moved} host-to-device copy events, creating on the device {direct}"
    return "not-reproduced", f"{moved} vs {direct} copy events"


# code -> probe, from the rules' `evidence` (generated: verify/evidence_index.py).
PROBES: dict[str, Callable[[dict, str], Result]] = {
    code: getattr(evidence_index, name, None) or globals()[name] for code, name in evidence_index.PROBES.items()}
