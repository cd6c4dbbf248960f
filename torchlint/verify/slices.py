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
import warnings

import torch
import torch.nn as nn

from safety import ALLOWED_BUILTINS  # next to this file in the worker's sys.path
import evidence_index  # next to this file in the worker's sys.path (generated)
from _evidence import first_line  # next to this file: the helpers evidence functions share

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Optional

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


def _namespace(handlers: Any, program: str) -> dict[str, Any]:
    """The globals a run executes in, its `_tl_*` wrappers bound to `handlers`."""
    # A whole program (verify/program.py) has every builtin: the OS sandbox is its
    # boundary, not the allow-list; its prints are dropped as a slice's are.
    table = dict(vars(builtins), print=lambda *a, **k: None) if program else _builtins()
    namespace: dict[str, Any] = {
        "__builtins__": table, "__name__": "__main__", "_tl_call": handlers.call, "_tl_at": handlers.at,
        "_tl_raised": handlers.raised, "_tl_thunk": handlers.thunk, "_tl_ran": handlers.ran,
        "_tl_mark": handlers.mark, "_tl_torch": torch,
    }
    if program:
        namespace["__file__"] = program
    return namespace


class _Recorder:
    """The `_tl_*` wrappers one slice run calls (see instrument.py), and what they recorded:
    `obs` maps a tag to its first records. A run stops at `stop`: "flag" (after the flagged
    call), "flag*2" (after its second call), or a tag (the first one after the flag)."""

    def __init__(self, stop: str, want_grads: bool, program: str = "") -> None:
        self.stop, self.want_grads = stop, want_grads
        self.obs: dict[str, list[Record]] = {}
        self.seen: set[str] = set()
        self.namespace = _namespace(self, program)

    def record(self, tag: str, rec: Record) -> None:
        self.obs.setdefault(tag, [])
        if len(self.obs[tag]) < _KEEP:
            self.obs[tag].append(rec)
        self.seen.add(tag)

    def should_stop(self, tag: str) -> bool:
        if self.stop == "flag":
            return tag == "flag"
        if self.stop == "flag*2":
            return tag == "flag" and len(self.obs.get("flag", ())) >= 2
        return tag == self.stop and "flag" in self.seen

    def _finish(self, tag: str, rec: Record) -> Any:
        self.record(tag, rec)
        if self.should_stop(tag):
            raise _Stop()
        return rec["value"]

    def passes(self, tag: str) -> bool:
        """A backward pass before the flagged write: not observed."""
        return self.stop == "backward" and tag == self.stop and "flag" not in self.seen

    def tracks(self, tag: str) -> bool:
        return self.want_grads or (self.stop == "backward" and tag == self.stop)

    def call(self, tag: str, fn: Callable, *args: Any, **kwargs: Any) -> Any:
        if self.passes(tag):
            return fn(*args, **kwargs)
        rec = _observed_call(self.namespace, fn, args, kwargs, self.tracks(tag), tag == "backward")
        if "exc" in rec:
            self.record(tag, rec)
            raise _Stop()
        return self._finish(tag, rec)

    def _value(self, tag: str, rec: Record, thunk: Callable[[], Any]) -> None:
        try:
            rec["value"] = thunk()
        except Exception as exc:  # noqa: BLE001 - the exception is what we observe
            rec["exc"] = exc
            self.record(tag, rec)
            raise _Stop() from None

    def at(self, tag: str, thunk: Callable[[], Any]) -> Any:
        value = thunk()
        self.record(tag, Record(value=value))
        return value

    def thunk(self, tag: str, thunk: Callable[[], Any]) -> Any:
        rec = Record(thunk=thunk)
        self._value(tag, rec, thunk)
        return self._finish(tag, rec)

    def raised(self, tag: str, exc: BaseException) -> None:
        self.record(tag, Record(exc=exc))
        raise _Stop()

    def ran(self, tag: str) -> None:
        self.record(tag, Record())
        if self.should_stop(tag):
            raise _Stop()

    def mark(self, tag: str) -> None:
        self.record(tag, Record())


def _observed_call(namespace: dict[str, Any], fn: Callable, args: tuple, kwargs: dict, track: bool,
                   modes: bool) -> Record:
    """Make the call, recording its inputs and its value or exception (never raised here)."""
    receiver = getattr(fn, "__self__", None)
    rec = Record(func=fn, args=args, kwargs=kwargs, receiver=receiver, before=_snapshot(receiver),
                 grads_before=_grads(namespace) if track else None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            rec["value"] = fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - the exception is what we observe
            rec["exc"] = exc
            return rec
    rec["warnings"] = [str(w.message) for w in caught]
    if track:
        rec["grads"] = _grads(namespace)
    if modes:
        rec["modes"] = {name: m.training for name, m in namespace.items()
                        if isinstance(m, nn.Module) and not name.startswith("_")}
    return rec


def run_variant(source: str, stop: str, want_grads: bool = False, seconds: float = 0.0,
                program: str = "") -> dict[str, Any]:
    """One run of a slice, or with `program` (its file's path) of a whole program."""
    recorder = _Recorder(stop, want_grads, program)
    stopped, error = _execute(source, recorder.namespace, seconds, program)
    return {"obs": recorder.obs, "stopped": stopped, "error": error, "namespace": recorder.namespace}


def _execute(source: str, namespace: dict[str, Any], seconds: float, program: str) -> tuple[bool, Optional[BaseException]]:
    """(whether a wrapper stopped the run, what ended it otherwise)."""
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
        exec(compile(source, program or "<slice>", "exec"), namespace)  # noqa: S102 - see the module doc
    except _Stop:
        stopped = True
    except _OutOfTime:
        error = TimeoutError(f"the slice ran past {seconds:g}s before the flagged line")
    except Exception as exc:  # noqa: BLE001 - it never reached the flagged line
        error = exc
    except SystemExit as exc:  # a program's own exit (argparse without its arguments, sys.exit)
        error = RuntimeError(f"the program exited (SystemExit: {exc.code})")
    finally:
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
    return stopped, error


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


# code -> judge: each rule's own, copied from its module (generated: verify/evidence_index.py).
JUDGES = evidence_index.JUDGES


def run_slice(code: str, facts: dict, variants: list[str], stop: str, want_grads: bool = False,
              seconds: float = 0.0, program: str = "") -> tuple[Optional[Result], str]:
    """(result, why-not): result None when the slice did not reach the flagged line.
    `seconds` bounds each run, leaving the rest of the request's time to the fact probe."""
    runs = [run_variant(v, stop, want_grads, seconds, program) for v in variants]
    judge = JUDGES.get(code)
    result = judge(facts, runs) if judge is not None else None
    if result is not None:
        return result, ""
    err = next((r["error"] for r in runs if r["error"] is not None), None)
    what = "the program" if program else "the slice"
    return None, (f"{what} stopped before the flagged line with {first_line(err)}" if err is not None
                  else f"{what} did not reach the flagged line")


# -- one program run for every finding of a file (verify/program.py) -------------------
class _Batch:
    """The `_tl_*` wrappers of one program run shared by several findings of a file. Each
    member's tags carry its prefix (`m0:flag`; one call observed for two members carries
    both, space-separated). A member is judged the moment its own run would have stopped,
    with the program's state as it is there; then its wrappers pass through. Its exception
    is re-raised, so the program goes on as written; the run ends when every member is
    judged, or the program ends, fails or runs out of time."""

    def __init__(self, members: list[dict], program: str, tainted: Callable[[], list[str]]) -> None:
        self.namespace = _namespace(self, program)
        self.members: dict[str, tuple[dict, _Recorder]] = {}
        for member in members:
            recorder = _Recorder(member.get("stop", "flag"), bool(member.get("grads")), program)
            recorder.namespace = self.namespace
            self.members[member["tag"]] = (member, recorder)
        self.results: dict[str, tuple[Optional[Result], list[str]]] = {}
        self.tainted, self.judging = tainted, False

    def _live(self, tags: str) -> list[tuple[_Recorder, str]]:
        if self.judging:
            return []  # a judge reruns the flagged call: nobody's observation
        out = []
        for tagged in tags.split():
            prefix, _, tag = tagged.partition(":")
            if prefix in self.members and prefix not in self.results:
                out.append((self.members[prefix][1], tag))
        return out

    def judge(self, recorder: _Recorder, stopped: bool = True, error: Optional[BaseException] = None) -> None:
        prefix = next(p for p, (_, r) in self.members.items() if r is recorder)
        member = self.members[prefix][0]
        run = {"obs": recorder.obs, "stopped": stopped, "error": error, "namespace": self.namespace}
        judge = JUDGES.get(member["code"])
        self.judging = True
        try:
            with torch.random.fork_rng(devices=[]), _python_rng():  # a judge's reruns do not move the program's RNG
                result = judge(member.get("facts") or {}, [run]) if judge is not None else None
        except Exception as exc:  # noqa: BLE001 - one member's failing judge is its own error
            result = ("error", f"probe failed: {first_line(exc)}")
        finally:
            self.judging = False
        self.results[prefix] = (result, list(self.tainted()))

    def _after(self, exc: Optional[BaseException] = None) -> None:
        if len(self.results) == len(self.members):
            raise _Stop()
        if exc is not None:
            raise exc

    def _conclude(self, live: list[tuple[_Recorder, str]], rec: Record) -> Any:
        for recorder, tag in live:
            recorder.record(tag, rec)
            if "exc" in rec or recorder.should_stop(tag):
                self.judge(recorder)
        self._after(rec.get("exc"))
        return rec.get("value")

    def call(self, tags: str, fn: Callable, *args: Any, **kwargs: Any) -> Any:
        live = [(r, t) for r, t in self._live(tags) if not r.passes(t)]
        if not live:
            return fn(*args, **kwargs)
        rec = _observed_call(self.namespace, fn, args, kwargs, any(r.tracks(t) for r, t in live),
                             any(t == "backward" for _, t in live))
        return self._conclude(live, rec)

    def thunk(self, tags: str, thunk: Callable[[], Any]) -> Any:
        live = self._live(tags)
        if not live:
            return thunk()
        rec = Record(thunk=thunk)
        try:
            rec["value"] = thunk()
        except Exception as exc:  # noqa: BLE001 - the exception is what we observe
            rec["exc"] = exc
        return self._conclude(live, rec)

    def at(self, tags: str, thunk: Callable[[], Any]) -> Any:
        value = thunk()
        for recorder, tag in self._live(tags):
            recorder.record(tag, Record(value=value))
        return value

    def raised(self, tags: str, exc: BaseException) -> None:
        self._conclude(self._live(tags), Record(exc=exc))
        raise exc  # every member that saw it was already judged

    def ran(self, tags: str) -> None:
        self._conclude(self._live(tags), Record())

    def mark(self, tags: str) -> None:
        for recorder, tag in self._live(tags):
            recorder.record(tag, Record())


class _python_rng:
    """Keeps `random`'s and numpy's global state across a judge."""

    def __enter__(self) -> None:
        self.state = random.getstate()
        try:
            import numpy
            self.numpy: Any = numpy.random.get_state()
        except ImportError:
            self.numpy = None

    def __exit__(self, *exc: Any) -> None:
        random.setstate(self.state)
        if self.numpy is not None:
            import numpy
            numpy.random.set_state(self.numpy)


def run_batch(members: list[dict], source: str, program: str, seconds: float,
              tainted: Callable[[], list[str]]) -> list[tuple[Optional[Result], str, list[str]]]:
    """One run of `program` for every member (its tag prefix, rule code, facts, stop and
    grads): per member, (the judge's result or None, why not, the stand-ins the program had
    used when the member was judged)."""
    batch = _Batch(members, program, tainted)
    _stopped, error = _execute(source, batch.namespace, seconds, program)
    out = []
    for prefix, (_, recorder) in batch.members.items():
        if prefix not in batch.results:  # its run would have gone on to the end, as this one did
            batch.judge(recorder, stopped=False, error=error)
        result, used = batch.results[prefix]
        why = ""
        if result is None:
            why = (f"the program stopped before the flagged line with {first_line(error)}" if error is not None
                   else "the program did not reach the flagged line")
        out.append((result, why, used))
    return out
