"""The per-file CPU budget (`lint-timeout`): a file that takes longer than this to lint
becomes one TL000 finding instead of a stalled CI job.

Where it can, the budget is a CPU-time timer (`setitimer(ITIMER_PROF)`) whose signal raises
`LintTimeout` at the next bytecode, wherever the time goes: the walk, one slow rule handler,
an `end_file`. Signals are only delivered to the main thread, which is where `torchlint
check` lints with `--jobs 1` and where each worker process of `--jobs N` lints. Elsewhere
(another thread, Windows), the walker checks the thread's CPU clock at each node it enters.
`LintTimeout` derives from BaseException so that no `except Exception` around a rule
handler mistakes it for a rule bug. (`_thread` and `_signal`, not `threading` and `signal`:
a one-file check imports nothing that needs their ~1 ms each.)"""

from __future__ import annotations

import _thread
import _signal as signal
import time
from contextlib import contextmanager

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Iterator, Optional

DEFAULT_LINT_TIMEOUT = 60.0  # CPU seconds per file: a dense 5 MiB file lints in ~25 s here
MIN_LINT_TIMEOUT = 0.001

_HAS_ITIMER = hasattr(signal, "setitimer") and hasattr(signal, "SIGPROF")


class LintTimeout(BaseException):
    """The file's CPU budget ran out."""


class _State(_thread._local):
    deadline: Optional[float] = None  # thread CPU time past which the walker stops (fallback)
    armed = False  # the SIGPROF timer belongs to a budget in force
    paused = False  # inside paused(): a nested pause must not restart the stopped timer


_state = _State()
_lock = _thread.allocate_lock()
fallback_clocks = 0  # threads linting under the fallback clock; the walker checks only when > 0


def _on_sigprof(signum: int, frame: Any) -> None:
    if _state.armed:  # a late signal after the budget ended is ignored
        raise LintTimeout


def check() -> None:
    """Called by the walker at each node when some thread uses the fallback clock."""
    deadline = _state.deadline
    if deadline is not None and time.thread_time() > deadline:
        raise LintTimeout


@contextmanager
def cpu_budget(seconds: Optional[float]) -> Iterator[None]:
    """Raise LintTimeout in the body once it has used `seconds` of CPU time (None: no limit)."""
    if seconds is None or _state.armed or _state.deadline is not None:
        yield  # no limit, or already inside a budget (which keeps its own deadline)
        return
    previous = _install_handler() if _HAS_ITIMER else False
    if previous is not False:
        if previous is None:  # installed outside Python; a default action would kill us
            previous = signal.SIG_IGN
        _state.armed = True
        signal.setitimer(signal.ITIMER_PROF, seconds)
        try:
            yield
        finally:
            _state.armed = False
            signal.setitimer(signal.ITIMER_PROF, 0)
            signal.signal(signal.SIGPROF, previous)
        return
    global fallback_clocks
    _state.deadline = time.thread_time() + seconds
    with _lock:
        fallback_clocks += 1
    try:
        yield
    finally:
        _state.deadline = None
        with _lock:
            fallback_clocks -= 1


@contextmanager
def paused() -> Iterator[None]:
    """Run the body off the budget in force: one-off work of the process (importing a rule
    module, which the first file to wake the rule would pay for) must not make that file's
    TL000 depend on which file came first."""
    if _state.paused:
        yield
        return
    _state.paused = True
    try:
        with _off_the_clock():
            yield
    finally:
        _state.paused = False


@contextmanager
def _off_the_clock() -> Iterator[None]:
    if _state.armed:
        remaining, _ = signal.getitimer(signal.ITIMER_PROF)
        signal.setitimer(signal.ITIMER_PROF, 0)
        try:
            yield
        finally:
            if _state.armed:
                signal.setitimer(signal.ITIMER_PROF, max(remaining, 1e-6))
        return
    if _state.deadline is not None:
        start = time.thread_time()
        try:
            yield
        finally:
            if _state.deadline is not None:
                _state.deadline += time.thread_time() - start
        return
    yield


def _install_handler() -> Any:
    """The SIGPROF handler it replaced, or False off the main thread (where Python refuses to
    install one, and no signal would be delivered)."""
    try:
        return signal.signal(signal.SIGPROF, _on_sigprof)
    except ValueError:
        return False


def describe_timeout(seconds: float) -> str:
    return (f"linting this file took more than {seconds:g} s of CPU time (lint-timeout); it was skipped "
            f"and none of its findings are reported (raise --lint-timeout to check it)")
