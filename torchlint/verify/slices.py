# torchlint: noqa  (runs flagged user code on purpose, inside the probe worker only)
"""Worker side of program slices: run the user's own code (already checked against the
allow-list by the parent) with restricted builtins, record what happens at the flagged
call or statement, and judge it.

Runs only inside the probe worker. Verdicts: `confirmed` (the hazard happened in the
user's run; the evidence quotes that run's values), `not-reproduced` (the user's code ran
the flagged line without the hazard), or None when the run never reached the flagged line
(the worker then falls back to the rule's fact probe)."""

from __future__ import annotations

import builtins
import random
import signal
import sys
import warnings
from typing import Any, Callable, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

from safety import ALLOWED_BUILTINS  # next to this file in the worker's sys.path
import evidence_index  # next to this file in the worker's sys.path (generated)
from probes import count_copies, first_line  # shared with the fact probes

Result = tuple[str, str]
_KEEP = 3  # records kept per tag


class _Stop(BaseException):
    """Ends a slice run at the observed point (not an Exception: user `except` cannot catch it)."""


class _OutOfTime(BaseException):
    """The slice ran past its share of the request's time."""


class Record(dict):
    pass


def _builtins() -> dict[str, Any]:
    table = {name: getattr(builtins, name) for name in ALLOWED_BUILTINS if hasattr(builtins, name)}
    table["print"] = lambda *a, **k: None
    # Import statements were checked by the parent (torch, numpy, math, random only), and no
    # dunder name is reachable from user code; torch's own lazy imports need these.
    table["__import__"] = builtins.__import__
    table["__build_class__"] = builtins.__build_class__
    return table


def _snapshot(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return {"dtype": value.dtype, "device": value.device, "shape": tuple(value.shape),
                "contiguous": value.is_contiguous()}
    return None


def run_variant(source: str, stop: str, want_grads: bool = False, seconds: float = 0.0) -> dict[str, Any]:
    obs: dict[str, list[Record]] = {}
    seen: set[str] = set()

    def record(tag: str, rec: Record) -> None:
        obs.setdefault(tag, [])
        if len(obs[tag]) < _KEEP:
            obs[tag].append(rec)
        seen.add(tag)

    def should_stop(tag: str) -> bool:
        if stop == "flag":
            return tag == "flag"
        if stop == "flag*2":
            return tag == "flag" and len(obs.get("flag", ())) >= 2
        return tag == stop and "flag" in seen

    def tl_call(tag: str, fn: Callable, *args: Any, **kwargs: Any) -> Any:
        if stop == "backward" and tag == stop and "flag" not in seen:
            return fn(*args, **kwargs)  # a backward pass before the flagged write
        receiver = getattr(fn, "__self__", None)
        track = want_grads or (stop == "backward" and tag == stop)
        rec = Record(func=fn, args=args, kwargs=kwargs, receiver=receiver, before=_snapshot(receiver),
                     grads_before=_grads(namespace) if track else None)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                rec["value"] = fn(*args, **kwargs)
            except Exception as exc:  # noqa: BLE001 - the exception is what we observe
                rec["exc"] = exc
                record(tag, rec)
                raise _Stop() from None
        rec["warnings"] = [str(w.message) for w in caught]
        if track:
            rec["grads"] = _grads(namespace)
        if tag == "backward":
            rec["modes"] = {name: m.training for name, m in namespace.items()
                            if isinstance(m, nn.Module) and not name.startswith("_")}
        record(tag, rec)
        if should_stop(tag):
            raise _Stop()
        return rec["value"]

    def tl_at(tag: str, thunk: Callable[[], Any]) -> Any:
        value = thunk()
        record(tag, Record(value=value))
        return value

    def tl_thunk(tag: str, thunk: Callable[[], Any]) -> Any:
        rec = Record(thunk=thunk)
        try:
            rec["value"] = thunk()
        except Exception as exc:  # noqa: BLE001 - the exception is what we observe
            rec["exc"] = exc
            record(tag, rec)
            raise _Stop() from None
        record(tag, rec)
        if should_stop(tag):
            raise _Stop()
        return rec["value"]

    def tl_raised(tag: str, exc: BaseException) -> None:
        record(tag, Record(exc=exc))
        raise _Stop()

    def tl_ran(tag: str) -> None:
        record(tag, Record())
        if should_stop(tag):
            raise _Stop()

    def tl_mark(tag: str) -> None:
        record(tag, Record())

    namespace: dict[str, Any] = {
        "__builtins__": _builtins(), "__name__": "__main__", "_tl_call": tl_call, "_tl_at": tl_at,
        "_tl_raised": tl_raised, "_tl_thunk": tl_thunk, "_tl_ran": tl_ran, "_tl_mark": tl_mark, "_tl_torch": torch,
    }
    _seed()
    error: Optional[BaseException] = None
    stopped = False
    alarm = seconds > 0 and hasattr(signal, "setitimer")
    if alarm:
        def out_of_time(signum: int, frame: Any) -> None:
            raise _OutOfTime()
        signal.signal(signal.SIGALRM, out_of_time)
        signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        exec(compile(source, "<slice>", "exec"), namespace)  # noqa: S102 - allow-listed by the parent
    except _Stop:
        stopped = True
    except _OutOfTime:
        error = TimeoutError(f"the slice ran past {seconds:g}s before the flagged line")
    except Exception as exc:  # noqa: BLE001 - it never reached the flagged line
        error = exc
    finally:
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
    return {"obs": obs, "stopped": stopped, "error": error, "namespace": namespace}


def _seed() -> None:
    torch.manual_seed(0)
    random.seed(0)
    try:
        import numpy
        numpy.random.seed(0)
    except ImportError:
        pass


def _grads(namespace: dict[str, Any]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for name, value in list(namespace.items()):
        if name.startswith("_"):
            continue
        if isinstance(value, torch.Tensor) and value.is_leaf and value.requires_grad:
            out[name] = _values(value.grad)
        elif isinstance(value, nn.Module):
            for pname, p in value.named_parameters():
                out[f"{name}.{pname}"] = _values(p.grad)
    return out


def _values(t: Optional[torch.Tensor]) -> list[float]:
    if t is None:
        return []
    return [round(float(v), 6) for v in t.detach().flatten()[:6].cpu()]


def describe(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"a {str(value.dtype).replace('torch.', '')} tensor of shape {tuple(value.shape)}"
    return type(value).__name__


def _flag(runs: list[dict[str, Any]], index: int = 0) -> Optional[Record]:
    recs = runs[index]["obs"].get("flag")
    return recs[0] if recs else None


def _ran(what: str) -> Callable[[Callable[..., Optional[Result]]], Callable[..., Optional[Result]]]:
    """A judge of a flagged call that has to complete: None when the run never reached
    it, `error` when it raised; otherwise the judge sees its record."""
    def wrap(judge: Callable[[dict, Record, list[dict[str, Any]]], Optional[Result]]) -> Callable[..., Optional[Result]]:
        def run(facts: dict, runs: list[dict[str, Any]]) -> Optional[Result]:
            rec = _flag(runs)
            if rec is None:
                return None
            if rec.get("exc") is not None:
                return "error", f"{what} raised {first_line(rec['exc'])}"
            return judge(facts, rec, runs)
        return run
    return wrap


# -- judges: (facts, runs) -> Result, or None when the flag was not reached ---------------
def _expect_raise(matches: Callable[[BaseException], bool], what: str, fine: Callable[[Record], str]) -> Callable:
    """The hazard is an exception at the flagged line: `matches` tells it from others."""
    def judge(facts: dict, runs: list[dict[str, Any]]) -> Optional[Result]:
        rec = _flag(runs)
        if rec is None:
            return None
        exc = rec.get("exc")
        if exc is not None and matches(exc):
            return "confirmed", f"{what} raised {first_line(exc)}"
        if exc is not None:
            return "error", f"{what} raised an unrelated {first_line(exc)}"
        return "not-reproduced", fine(rec)
    return judge


def _says(*needles: str) -> Callable[[BaseException], bool]:
    return lambda exc: any(n in str(exc) for n in needles)


def _tl101_fine(rec: Record) -> str:
    target = getattr(rec.get("func"), "__self__", None)
    fn = getattr(target, "grad_fn", None)
    return f"the call ran: the differentiated tensor has grad_fn {type(fn).__name__ if fn else None}"


def _judge_tl102(facts: dict, runs: list[dict[str, Any]]) -> Optional[Result]:
    written, tracked = runs
    if not written["obs"].get("flag") or not written["obs"].get("backward"):
        return None
    grads = written["obs"]["backward"][0].get("grads") or {}
    shown = "; ".join(f"{k}.grad={v}" for k, v in list(grads.items())[:2])
    rec = (tracked["obs"].get("backward") or [None])[0]
    exc = rec.get("exc") if rec else tracked.get("error")
    if exc is not None and "inplace operation" in str(exc):
        return ("confirmed", f"the .data write changed a tensor autograd had saved for backward, so the "
                             f"backward pass used the new values ({shown}); the same write without .data makes "
                             f"torch raise {first_line(exc)}")
    if rec is not None and rec.get("grads") is not None:
        if rec["grads"] == grads:
            return ("not-reproduced", f"the gradient after the .data write equals the gradient of the same "
                                      f"write tracked by autograd ({shown}): nothing saved for backward was changed")
        return ("confirmed", f"the gradient with the .data write ({shown}) differs from the gradient of the same "
                             f"write tracked by autograd")
    return None


def _judge_tl107(facts: dict, runs: list[dict[str, Any]]) -> Optional[Result]:
    rec = _flag(runs)
    values = runs[0]["obs"].get("value")
    if rec is None or not values:
        return None
    if rec.get("exc") is not None:
        return "error", f"the flagged line raised {first_line(rec['exc'])}"
    value = values[0]["value"]
    fn = getattr(value, "grad_fn", None)
    if isinstance(value, torch.Tensor) and fn is not None:
        return ("confirmed", f"the accumulated value is {describe(value)} with grad_fn {type(fn).__name__}: "
                             "it keeps this step's autograd graph alive")
    return "not-reproduced", f"the accumulated value is {describe(value)} without a graph"


def _judge_tl109(facts: dict, runs: list[dict[str, Any]]) -> Optional[Result]:
    rec = _flag(runs)
    if rec is None:
        return None
    exc = rec.get("exc")
    if exc is not None:
        if isinstance(exc, TypeError) and "require_grad" in str(exc):
            return "confirmed", f"the call raised {first_line(exc)}"
        return "error", f"the flagged line raised an unrelated {first_line(exc)}"
    owners = runs[0]["obs"].get("owner")
    owner = owners[0]["value"] if owners else None
    if isinstance(owner, torch.Tensor):
        if not owner.requires_grad:
            return "confirmed", f"after the assignment the tensor's requires_grad is {owner.requires_grad}"
        return "not-reproduced", "the tensor already requires grad: the misspelt attribute changes nothing"
    if owners:
        return "not-reproduced", f"the object is a {type(owner).__name__}, not a tensor"
    return None


def _judge_tl201(facts: dict, runs: list[dict[str, Any]]) -> Optional[Result]:
    rec = _flag(runs)
    if rec is None:
        return None
    args = rec["args"]
    target = args[1] if len(args) > 1 else rec["kwargs"].get("target")
    inp = args[0] if args else rec["kwargs"].get("input")
    shapes = f"input {describe(inp)}, target {describe(target)}"
    exc = rec.get("exc")
    if exc is not None and ("dtype" in str(exc) or "Long" in str(exc)):
        return "confirmed", f"the loss call got {shapes} and raised {first_line(exc)}"
    if exc is not None:
        return "error", f"the loss call got {shapes} and raised an unrelated {first_line(exc)}"
    value = rec.get("value")
    loss = f"{float(value):.4g}" if isinstance(value, torch.Tensor) and value.numel() == 1 else describe(value)
    big = isinstance(target, torch.Tensor) and target.dtype == torch.float32 and target.numel() and \
        float(target.abs().max()) > 2**24
    if big:
        return "confirmed", f"the loss ran with {shapes}, but target values above 2**24 lost precision in float32"
    return "not-reproduced", f"the loss ran with {shapes} (loss {loss}): the float target is valid here"


@_ran("the call")
def _judge_tl202(facts: dict, rec: Record, runs: list[dict[str, Any]]) -> Optional[Result]:
    receiver, value, before = rec.get("receiver"), rec.get("value"), rec.get("before")
    if not isinstance(receiver, torch.Tensor) or before is None:
        return "not-reproduced", f"the receiver is a {type(receiver).__name__}, not a tensor"
    if value is receiver:
        return "not-reproduced", "the call returned the tensor itself: it was already in the requested form"
    return ("confirmed", f"the call returned a new tensor, {describe(value)} on {getattr(value, 'device', '?')}; the original "
                         f"is still {describe(receiver)} on {receiver.device}")


@_ran("the call")
def _judge_tl204(facts: dict, rec: Record, runs: list[dict[str, Any]]) -> Optional[Result]:
    value = rec.get("value")
    if isinstance(value, torch.Tensor) and value.dtype == torch.float64:
        return "confirmed", f"the call returned {describe(value)}"
    return "not-reproduced", f"the call returned {describe(value)}"


@_ran("the call")
def _judge_tl205(facts: dict, rec: Record, runs: list[dict[str, Any]]) -> Optional[Result]:
    args, value = rec["args"], rec.get("value")
    if args and all(isinstance(a, int) and not isinstance(a, bool) for a in args):
        return ("confirmed", f"the call with {', '.join(map(str, args))} returned {describe(value)} of uninitialised "
                             f"memory, not a tensor holding {args[0] if len(args) == 1 else list(args)}")
    return "not-reproduced", f"the call built {describe(value)} from the given values"


def _judge_tl401(facts: dict, runs: list[dict[str, Any]]) -> Optional[Result]:
    rec = _flag(runs)
    acts = runs[0]["obs"].get("act")
    if rec is None or not acts:
        return None
    if rec.get("exc") is not None:
        return "error", f"the loss call raised {first_line(rec['exc'])}"
    act = acts[0]
    z = act["args"][0] if act["args"] else None
    name = getattr(act["func"], "__name__", "")
    dim = act["kwargs"].get("dim", act["args"][1] if len(act["args"]) > 1 else None)
    fn, args, kwargs = rec["func"], list(rec["args"]), dict(rec["kwargs"])
    loss_name = str(facts.get("loss", ""))
    if not isinstance(z, torch.Tensor):
        return None
    right_input = z
    if "nll" in loss_name.lower() or "NLL" in loss_name:
        right_input = F.log_softmax(z, dim=dim if dim is not None else -1)
    if args:
        args[0] = right_input
    else:
        kwargs["input"] = right_input
    with torch.no_grad():
        right = fn(*args, **kwargs)
    wrong = rec["value"]
    if not (isinstance(wrong, torch.Tensor) and isinstance(right, torch.Tensor) and wrong.numel() == right.numel()):
        return None
    diff = float((wrong.detach().float() - right.detach().float()).abs().max())
    wrong_s, right_s = _short(wrong), _short(right)
    base = "the logits" if "nll" not in loss_name.lower() else "log_softmax of the logits"
    if diff > 1e-4 * max(1.0, float(right.detach().abs().max())):
        return "confirmed", f"the loss is {wrong_s} with {name or 'the activation'} first, {right_s} on {base}"
    return "not-reproduced", f"the loss is {wrong_s} either way ({right_s} on {base})"


def _short(t: torch.Tensor) -> str:
    return f"{float(t):.4f}" if t.numel() == 1 else str([round(float(v), 4) for v in t.flatten()[:3]])


@_ran("the call")
def _judge_tl403(facts: dict, rec: Record, runs: list[dict[str, Any]]) -> Optional[Result]:
    x = rec["args"][0] if rec["args"] else rec["kwargs"].get("input")
    if not isinstance(x, torch.Tensor):
        return None
    ndim = x.dim()
    implicit = 0 if ndim in (0, 1, 3) else 1
    if ndim >= 2 and implicit == 0:
        return ("confirmed", f"the input has shape {tuple(x.shape)}: the implicit dim is 0, so the probabilities "
                             "sum to 1 across the first (batch) dimension, not per sample")
    return ("not-reproduced", f"the input has shape {tuple(x.shape)}: the implicit dim is {implicit}"
            + (", the last dimension, as intended" if implicit == max(ndim - 1, 0) else " (the channel dimension)"))


def _nonzero(grads: Optional[dict[str, list[float]]]) -> dict[str, list[float]]:
    return {k: v for k, v in (grads or {}).items() if any(x != 0 for x in v)}


def _judge_tl103(facts: dict, runs: list[dict[str, Any]]) -> Optional[Result]:
    recs = runs[0]["obs"].get("flag") or []
    if any(r.get("exc") is not None for r in recs):
        return "error", f"backward() raised {first_line(next(r['exc'] for r in recs if r.get('exc') is not None))}"
    if len(recs) < 2:
        return None
    held = _nonzero(recs[1].get("grads_before"))
    if held:
        name, before = next(iter(held.items()))
        after = (recs[1].get("grads") or {}).get(name)
        return ("confirmed", f"before the second backward() {name}.grad still held the first step's {before}; "
                             f"backward added to it: {after}")
    return "not-reproduced", "the gradients were reset before the second backward()"


@_ran("zero_grad()")
def _judge_tl104(facts: dict, rec: Record, runs: list[dict[str, Any]]) -> Optional[Result]:
    before = _nonzero(rec.get("grads_before"))
    after = _nonzero(rec.get("grads"))
    if before and not after:
        name, values = next(iter(before.items()))
        return ("confirmed", f"zero_grad() after backward() cleared the gradients ({name}.grad {values} -> "
                             f"{(rec.get('grads') or {}).get(name) or None}), so the next step() has nothing to apply")
    if not before:
        return "not-reproduced", "there were no gradients to clear when zero_grad() ran"
    return "not-reproduced", "the gradients survived zero_grad()"


@_ran("constructing the module")
def _judge_tl206(facts: dict, rec: Record, runs: list[dict[str, Any]]) -> Optional[Result]:
    module, attr = rec.get("value"), str(facts.get("attribute", ""))
    if not attr:
        return None
    value = getattr(module, attr, None)
    if not isinstance(module, nn.Module) or not isinstance(value, torch.Tensor):
        return "not-reproduced", f"after construction self.{attr} is a {type(value).__name__}, not a plain tensor"
    saved = attr in module.state_dict()
    before = value.dtype
    module.to(torch.float64)
    after = getattr(module, attr).dtype
    params = {p.dtype for p in module.parameters()}
    if not saved:
        moved = f"; after .to(torch.float64) the parameters are {sorted(map(str, params))} and self.{attr} is " \
                f"{after}" if params and value.is_floating_point() else ""
        return "confirmed", f"'{attr}' is not in state_dict(), so it is neither saved nor moved with the module{moved}"
    return "not-reproduced", f"self.{attr} is registered ('{attr}' in state_dict(); {before} -> {after})"


@_ran("constructing the module")
def _judge_tl701(facts: dict, rec: Record, runs: list[dict[str, Any]]) -> Optional[Result]:
    module, attr = rec.get("value"), str(facts.get("attribute", ""))
    if not attr:
        return None
    value = getattr(module, attr, None)
    items = list(value.values()) if isinstance(value, dict) else list(value) if isinstance(value, (list, tuple)) else []
    held = [p for m in items if isinstance(m, nn.Module) for p in m.parameters()]
    registered = {id(p) for p in module.parameters()} if isinstance(module, nn.Module) else set()
    missing = [p for p in held if id(p) not in registered]
    if missing:
        return ("confirmed", f"parameters() yields {len(registered)} tensors; the {len(missing)} parameter tensors of "
                             f"the modules in self.{attr} are not among them")
    return "not-reproduced", f"self.{attr} holds no unregistered parameters ({type(value).__name__})"


@_ran("the call")
def _judge_tl703(facts: dict, rec: Record, runs: list[dict[str, Any]]) -> Optional[Result]:
    module = rec.get("receiver")
    if not isinstance(module, nn.Module):
        return "not-reproduced", f"the receiver is a {type(module).__name__}, not an nn.Module"
    from torch.nn.modules import module as module_impl
    hooks = (len(module._forward_hooks) + len(module._forward_pre_hooks)
             + len(module_impl._global_forward_hooks) + len(module_impl._global_forward_pre_hooks))
    if hooks:
        return ("confirmed", f"{type(module).__name__} has {hooks} forward hook(s) registered; calling .forward() "
                             "directly skipped them")
    return ("not-reproduced", f"no forward hooks are registered on {type(module).__name__} here, so .forward(x) "
                              "computed what calling the module would")


def _judge_tl704(facts: dict, runs: list[dict[str, Any]]) -> Optional[Result]:
    recs = runs[0]["obs"].get("backward")
    if not runs[0]["obs"].get("flag") or not recs:
        return None
    modes = recs[0].get("modes") or {}
    off = sorted(name for name, training in modes.items() if not training)
    if off:
        return ("confirmed", f"at the first backward() after eval(), {', '.join(off[:3])} still had training == "
                             "False: dropout off and batch norm on running statistics while training")
    if modes:
        return "not-reproduced", f"at the next backward() every module was back in training mode ({', '.join(modes)})"
    return None


@_ran("the conversion")
def _judge_tl203(facts: dict, rec: Record, runs: list[dict[str, Any]]) -> Optional[Result]:
    copies = count_copies(rec["thunk"])
    if copies >= 2:
        return "confirmed", f"the chained conversion ran {copies} copy kernels (aten::_to_copy); one .to() runs one"
    return ("not-reproduced", f"the chained conversion ran {copies} copy kernel{'s' if copies != 1 else ''} here: "
                              "one of its steps was a no-op on this device or dtype")


def _flat(value: Any, out: list[float], limit: int = 16) -> list[float]:
    """The numbers in a sample (tensors, arrays, scalars, nested tuples/lists/dicts)."""
    stack = [value]
    while stack and len(out) < limit:
        v = stack.pop(0)
        if isinstance(v, torch.Tensor):
            out.extend(float(x) for x in v.detach().flatten()[:limit].tolist())
        elif isinstance(v, (int, float, bool)):
            out.append(float(v))
        elif isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
        elif hasattr(v, "dtype") and hasattr(v, "tolist"):  # numpy arrays and scalars
            stack.append(torch.as_tensor(v))
    return [round(x, 8) for x in out[:limit]]


class _Tagged(torch.utils.data.Dataset):
    def __init__(self, dataset: Any, size: int) -> None:
        self.dataset, self.size = dataset, size

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> tuple[int, list[float]]:
        info = torch.utils.data.get_worker_info()
        return (info.id if info is not None else -1), _flat(self.dataset[index], [])


@_ran("creating the DataLoader")
def _judge_tl301(facts: dict, rec: Record, runs: list[dict[str, Any]]) -> Optional[Result]:
    loader = rec.get("value")
    if not isinstance(loader, torch.utils.data.DataLoader) or isinstance(
            loader.dataset, torch.utils.data.IterableDataset):
        return None
    workers = loader.num_workers
    if workers < 2:
        return "not-reproduced", f"num_workers={workers}: no second worker to repeat the stream"
    size = min(len(loader.dataset), 4 * workers)  # type: ignore[arg-type]  # map-style: it has a length
    # The user's dataset and worker_init_fn; one sample per index, in order, so worker k
    # draws indices k, k + workers, ...
    tagged = torch.utils.data.DataLoader(_Tagged(loader.dataset, size), batch_size=None, num_workers=workers,
                                         worker_init_fn=loader.worker_init_fn,
                                         multiprocessing_context="fork" if sys.platform.startswith("linux") else None)
    streams: dict[int, list[list[float]]] = {}
    for worker, sample in tagged:
        streams.setdefault(int(worker), []).append(sample)
    values = [streams[k] for k in sorted(streams)]
    if len(values) >= 2 and all(v == values[0] for v in values[1:]) and values[0]:
        return ("confirmed", f"the {len(values)} workers of this DataLoader produced identical samples: "
                             f"{values[0][0][:3]}, ... from different indices")
    return "not-reproduced", f"the {len(values)} workers produced different samples: " + ", ".join(
        str(v[0][:2]) for v in values[:3])


_judge_tl101 = _expect_raise(_says("does not require grad"), "the call", _tl101_fine)

_judge_tl702 = _expect_raise(lambda exc: isinstance(exc, AttributeError) and "__init__() call" in str(exc),
                             "constructing the module",
                             lambda rec: "the module was constructed: __init__ assigns no submodule, parameter or buffer")

_judge_tl105 = _expect_raise(_says("leaf Variable"), "the in-place update", lambda rec: "the in-place update ran")

_judge_tl106 = _expect_raise(_says("floating point"), "the call",
                             lambda rec: f"the call created {describe(rec.get('value'))}")

_judge_tl108 = _expect_raise(lambda exc: isinstance(exc, (TypeError, AttributeError)), "entering the with-statement",
                             lambda rec: "the object worked as a context manager")

_judge_tl304 = _expect_raise(_says("sampler", "mutually exclusive"), "the DataLoader call",
                             lambda rec: "the DataLoader accepted these options")

# code -> judge, from the rules' `evidence` (generated: verify/evidence_index.py).
JUDGES: dict[str, Callable[[dict, list[dict[str, Any]]], Optional[Result]]] = {
    code: globals()[name] for code, name in evidence_index.JUDGES.items()}


def run_slice(code: str, facts: dict, variants: list[str], stop: str, want_grads: bool = False,
              seconds: float = 0.0) -> tuple[Optional[Result], str]:
    """(result, why-not): result None when the slice did not reach the flagged line.
    `seconds` bounds each run, leaving the rest of the request's time to the fact probe."""
    runs = [run_variant(v, stop, want_grads, seconds) for v in variants]
    judge = JUDGES.get(code)
    result = judge(facts, runs) if judge is not None else None
    if result is not None:
        return result, ""
    err = next((r["error"] for r in runs if r["error"] is not None), None)
    return None, (f"the slice stopped before the flagged line with {first_line(err)}" if err is not None
                  else "the slice did not reach the flagged line")
