"""Where `torchlint run` sees a process end in a crash: the excepthook, a multiprocessing child's
exception (which never reaches the excepthook), and a fatal signal (faulthandler's dump). Each
records through `Monitor.record_crash` and leaves what the program prints as it was. Loaded by
path beside monitor.py (see its `_sibling`); standard library only."""

from __future__ import annotations

import functools
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

_FAULT_FILES: list = []  # faulthandler writes to their fds: they must stay open


def excepthook(monitor: Any, previous: Callable) -> Callable:
    """Records the exception that ends the process (the crash is a result), then hands it to the
    hook that was there, which prints the traceback exactly as before."""

    def hook(kind: type, value: BaseException, tb: Any) -> None:
        if not issubclass(kind, KeyboardInterrupt):
            try:
                monitor.record_crash(kind, value, tb)
            except Exception:  # the traceback must still be printed
                pass
        previous(kind, value, tb)

    return hook


def patch_process_bootstrap(monitor: Any) -> None:
    """A multiprocessing child's exception never reaches sys.excepthook: BaseProcess._bootstrap
    catches it and prints it with traceback.print_exc(). Hooking that call (in the child, for the
    child's run only) records it without adding a frame to what is printed."""
    import multiprocessing.process as mp_process
    import traceback

    bootstrap = mp_process.BaseProcess._bootstrap  # type: ignore[attr-defined]

    @functools.wraps(bootstrap)
    def _bootstrap(process: Any, *args: Any, **kwargs: Any) -> Any:
        print_exc = traceback.print_exc

        @functools.wraps(print_exc)
        def recording_print_exc(*a: Any, **k: Any) -> None:
            if sys._getframe(1).f_code is bootstrap.__code__:
                kind, value, tb = sys.exc_info()
                if value is not None and not isinstance(value, KeyboardInterrupt):
                    try:
                        monitor.record_crash(kind, value, tb)
                    except Exception as exc:
                        monitor.internal_error("process crash", exc)
            print_exc(*a, **k)

        traceback.print_exc = recording_print_exc  # type: ignore[assignment]
        try:
            return bootstrap(process, *args, **kwargs)
        finally:
            traceback.print_exc = print_exc  # type: ignore[assignment]

    monitor.patch(mp_process.BaseProcess, "_bootstrap", _bootstrap)


def log_fatal_signals(directory: str) -> None:
    """A segfault or abort gets no excepthook: faulthandler writes the Python frames to
    fault-PID.txt (analysis.py reads them), then the signal kills the process as before. Left
    alone when the program enabled faulthandler itself (-X faulthandler): its dump is its own."""
    import faulthandler

    if faulthandler.is_enabled():
        return
    try:
        handle = open(os.path.join(directory, f"fault-{os.getpid()}.txt"), "w", encoding="utf-8")
        faulthandler.enable(handle)
    except (OSError, ValueError):
        return
    _FAULT_FILES.append(handle)

    def per_child() -> None:
        """A forked child's dump goes to its own file: the inherited fd now points there (if the
        program moved faulthandler elsewhere meanwhile, that fd is unused and this is harmless)."""
        try:
            fd = os.open(os.path.join(directory, f"fault-{os.getpid()}.txt"), os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC,
                         0o600)
            os.dup2(fd, handle.fileno(), inheritable=False)
            os.close(fd)
        except OSError:
            pass

    os.register_at_fork(after_in_child=per_child)
