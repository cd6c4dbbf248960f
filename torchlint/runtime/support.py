"""Which code is the program's own, and the helpers every monitor uses: loaded by path beside
monitor.py inside the user's processes, so only the standard library at import time (torch is
imported when a helper runs)."""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import re
import site
import sys
import sysconfig
import threading
import weakref

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Optional

ANSI = re.compile(r"\x1b\[[0-9;]*m")
CRASH_FRAMES = 12  # user frames of a crash's traceback kept, innermost last
CAUSE = re.compile(r"[A-Za-z]+ error: ")  # a line naming a cause: "WeightsUnpickler error: ..."

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))  # torchlint/


# Every optimizer step of the first FULL_STEPS is watched; after them one in SAMPLE_EVERY is,
# and the per-step hooks are out in between (see `Monitor.watch`): a long run pays for a few
# hundred watched steps, not for every one. A module switching to eval or back to train
# (an evaluation pass) is watched until the next step ends. The checks that compare steps need
# two or three (a stale gradient, a graph kept); what varies by batch (labels, NaN, a diverging
# loss) is read again at every sampled step.
FULL_STEPS = 30
SAMPLE_EVERY = 100


def watched_step(step: int) -> bool:
    """Are the per-step hooks in for optimizer step `step` (1-based)?"""
    return step <= FULL_STEPS or step % SAMPLE_EVERY == 0


def _excluded_prefixes() -> tuple[str, ...]:
    """Directories whose files are not the user's: the stdlib, site-packages, torchlint. Both
    the names as given and with links resolved, so most files match without resolving."""
    given = [_PACKAGE_DIR, *(p for p in (sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib", "purelib",
                                                                              "platlib")) if p)]
    try:
        given.extend(site.getsitepackages())
    except AttributeError:  # some virtualenv versions
        pass
    paths = {os.path.abspath(p) for p in given} | {os.path.realpath(p) for p in given}
    return tuple(p.rstrip(os.sep) + os.sep for p in sorted(paths))


class UserCode:
    """Which source files are the user's own (not the stdlib, site-packages or torchlint)."""

    def __init__(self) -> None:
        self.prefixes = _excluded_prefixes()
        self._cache: dict[str, bool] = {}
        self._real: dict[str, str] = {}
        self._last_lines: dict[Any, int] = {}
        self._files_at = -1
        self._files: list[str] = []

    def add_excluded(self, directory: str) -> None:
        self.prefixes = self.prefixes + (os.path.realpath(directory).rstrip(os.sep) + os.sep,)
        self._cache.clear()

    def is_user(self, filename: str) -> bool:
        known = self._cache.get(filename)
        if known is None:
            # The raw name first: most library files match without resolving links (one lstat per
            # path component), which matters for the thousands of modules torch loads.
            known = not filename.startswith(("<", *self.prefixes)) and not self.realpath(filename).startswith(
                self.prefixes)
            self._cache[filename] = known
        return known

    def realpath(self, filename: str) -> str:
        real = self._real.get(filename)
        if real is None:
            real = self._real[filename] = os.path.realpath(filename)
        return real

    def site(self, depth: int = 2) -> Optional[list]:
        """[file, line, function, first line, last line] of the innermost user frame."""
        frame: Any = sys._getframe(depth)
        while frame is not None:
            code = frame.f_code
            if self.is_user(code.co_filename):
                return self.frame_site(frame)
            frame = frame.f_back
        return None

    def frame_site(self, frame: Any) -> list:
        code = frame.f_code
        return [self.realpath(code.co_filename), frame.f_lineno, code.co_name, code.co_firstlineno,
                self.last_line(code)]

    def frames(self, depth: int, limit: int) -> list:
        """The innermost `limit` user frames, innermost first."""
        found: list = []
        frame: Any = sys._getframe(depth)
        while frame is not None and len(found) < limit:
            if self.is_user(frame.f_code.co_filename):
                found.append(frame)
            frame = frame.f_back
        return found

    def last_line(self, code: Any) -> int:
        last = self._last_lines.get(code)
        if last is None:
            lines = [line for _, _, line in code.co_lines() if line] if hasattr(code, "co_lines") else []
            last = max(lines, default=code.co_firstlineno)
            self._last_lines[code] = last
        return last

    def files(self) -> list[str]:
        if len(sys.modules) == self._files_at:  # nothing imported since the last call
            return self._files
        self._files_at = len(sys.modules)
        self._files = self._scan_files()
        return self._files

    def _scan_files(self) -> list[str]:
        out = set()
        for module in list(sys.modules.values()):
            path = getattr(module, "__file__", None)
            if isinstance(path, str) and os.path.isabs(path) and path.endswith(".py") and self.is_user(path):
                out.add(self.realpath(path))
        return sorted(out)


def transparent_warn(real_warn: Callable, own_files: set[str], ours: Callable[[Any], bool] = lambda m: False,
                     compiling: Callable[[], bool] = lambda: False) -> Callable:
    """`warnings.warn` that looks through the monitors' wrappers. torch warns its caller's line
    (`stacklevel=2`); when that caller is a monitor's wrapper (in `own_files`), the warning would
    name that file. It
    goes one frame further out instead, to the program's line: same text, filters, "once per
    location" registry and `catch_warnings(record=True)` entry as without the monitors. A warning
    that only the monitors' presence causes (`ours(message)`) is not shown at all."""

    @functools.wraps(real_warn)
    def warn(message: Any, category: Any = None, stacklevel: int = 1, source: Any = None, **kwargs: Any) -> None:
        if compiling():  # a region torch.compile traces: no frames to walk
            return real_warn(message, category, stacklevel + 1, source, **kwargs)
        if ours(message):
            return None
        level = stacklevel
        try:
            frame: Any = sys._getframe(1)  # the function that warns: stacklevel 1
            for _ in range(level - 1):
                frame = frame.f_back
            while frame is not None and frame.f_code.co_filename in own_files:
                frame, level = frame.f_back, level + 1
        except (AttributeError, ValueError, TypeError):  # a stack shorter than stacklevel
            level = stacklevel
        real_warn(message, category, level + 1, source, **kwargs)  # + 1: this frame

    return warn


def tensors(value: Any, depth: int = 0) -> list:
    """The tensors in a module's inputs or outputs (nested two levels in lists, tuples, dicts)."""
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if depth < 2 and isinstance(value, (list, tuple)):
        return [t for item in value for t in tensors(item, depth + 1)]
    if depth < 2 and isinstance(value, dict):
        return [t for item in value.values() for t in tensors(item, depth + 1)]
    return []


def gradient_norms(m: Any, optimizer: Any) -> Optional[list[list[tuple[Any, float]]]]:
    """For each of `optimizer`'s groups, (parameter, L2 norm of its gradient) for the parameters
    holding one, read in one sync per device. The checks that read gradients at a step share
    it (non-finite-value, the --report series): memoized for the step. None where the
    gradients cannot be normed (sparse, exotic)."""
    memo = m.notes.get("gradient_norms")
    if memo is not None and memo[0]() is optimizer and memo[1] == m.steps:
        return memo[2]
    failed = m.notes.setdefault("gradients_not_normed", weakref.WeakSet())
    if optimizer in failed:
        return None
    import torch

    groups = [[p for p in group["params"] if p.grad is not None] for group in optimizer.param_groups]
    flat = [p for group in groups for p in group]
    if any(p.grad.layout is not torch.strided for p in flat):
        failed.add(optimizer)  # sparse embeddings' gradients: no shared norms, and no error either
        return None
    try:
        norms = torch._foreach_norm([p.grad for p in flat]) if flat else []
        by_device: dict[Any, list[int]] = {}
        for index, norm in enumerate(norms):
            by_device.setdefault(norm.device, []).append(index)
        values = [0.0] * len(flat)
        for indices in by_device.values():
            for index, value in zip(indices, torch.stack([norms[i] for i in indices]).float().tolist()):
                values[index] = value
        position = iter(values)
        found: Optional[list] = [[(p, next(position)) for p in group] for group in groups]
    except Exception as exc:  # reported once per optimizer
        failed.add(optimizer)
        m.internal_error("gradient norms", exc)
        found = None
    m.notes["gradient_norms"] = (weakref.ref(optimizer), m.steps, found)
    return found


def describe(tensor: Any) -> dict[str, Any]:
    return {"shape": list(tensor.shape), "dtype": str(tensor.dtype), "device": str(tensor.device)}


def rounded(values: list) -> list:
    return [round(float(v), 8) for v in values]


def owner(frame: Any) -> Any:
    """The nn.Module whose method is running in `frame`, if any."""
    import torch

    found = frame.f_locals.get("self") if frame is not None else None
    return found if isinstance(found, torch.nn.Module) else None


def sentence(line: str) -> str:
    """The first sentence of an error line, at most 300 characters."""
    end = line.find(". ", 20)
    return (line if end < 0 else line[:end + 1])[:300]


def error_lines(exc: BaseException) -> list[str]:
    return [line for line in (ANSI.sub("", line).strip() for line in str(exc).strip().splitlines()) if line]


def error_summary(exc: BaseException, details: int) -> tuple[str, list[str]]:
    """The first sentence of an exception's message, and up to `details` later lines that name
    a cause (torch.load's "WeightsUnpickler error: ...")."""
    lines = error_lines(exc)
    return (sentence(lines[0]) if lines else ""), [sentence(line) for line in lines[1:20] if CAUSE.match(line)][:details]


class FileSink:
    """One JSON-lines file per process, flushed per event, so a crash or a kill loses nothing."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self._pid = -1
        self._handle: Any = None
        self._lock = threading.Lock()

    def write(self, event: dict[str, Any]) -> None:
        pid = os.getpid()
        if pid != self._pid:  # a forked child starts its own file
            self._pid, self._lock = pid, threading.Lock()
            self._handle = open(os.path.join(self.directory, f"events-{pid}.jsonl"), "a", encoding="utf-8")
        with self._lock:
            self._handle.write(json.dumps(event, default=str) + "\n")
            self._handle.flush()


class ListSink:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def write(self, event: dict[str, Any]) -> None:
        self.events.append(json.loads(json.dumps(event, default=str)))


def env_rank() -> int:
    try:
        return int(os.environ.get("RANK", "0") or 0)
    except ValueError:
        return 0


class TorchImportHook:
    """A meta-path finder that installs the torch hooks right after `import torch` finishes."""

    def __init__(self, monitor: Any) -> None:
        self.monitor = monitor

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec("torch")
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader = spec.loader
        original = loader.exec_module
        monitor = self.monitor

        def exec_module(module: Any) -> None:
            original(module)
            del loader.exec_module
            try:
                monitor.install_torch()
            except Exception as exc:
                monitor.sink.write({"kind": "internal_error", "pid": os.getpid(), "where": "install",
                                    "error": repr(exc)})

        loader.exec_module = exec_module  # type: ignore[method-assign]  # wrap this one module's import
        return spec


def crash_fields(user: UserCode, kind: type, value: BaseException, tb: Any) -> tuple[Optional[list], dict]:
    """The site (the innermost user frame) and fields of the `crash` event of an exception. An
    exception that carries another process's traceback in its message (a DataLoader worker's,
    torch.multiprocessing.spawn's) is that exception, raised where that traceback ends."""
    frames = []
    while tb is not None:
        code = tb.tb_frame.f_code
        if user.is_user(code.co_filename):
            frames.append([user.realpath(code.co_filename), tb.tb_lineno, code.co_name, code.co_firstlineno,
                           user.last_line(code)])
        tb = tb.tb_next
    name = kind.__qualname__ if kind.__module__ in ("builtins", "__main__") else f"{kind.__module__}.{kind.__qualname__}"
    message, detail = error_summary(value, 2)
    embedded = embedded_traceback(str(value))
    if embedded is not None:
        inner, last = embedded
        name, _, inner_message = last.partition(": ")
        detail = [sentence(line) for line in error_lines(value)[:1]]  # "Caught IndexError in DataLoader worker ..."
        message = sentence(inner_message.strip())
        # A frame read from text has no code object: its function's lines are unknown.
        frames += [[user.realpath(path), row, function, row, row] for path, row, function in inner
                   if user.is_user(path)]
    return frames[-1] if frames else None, {"exception": name, "message": message, "detail": detail,
                                            "frames": frames[-CRASH_FRAMES:]}


_TRACEBACK = "Traceback (most recent call last):"
_FRAME = re.compile(r'^  File "(.+)", line (\d+), in (.+)$')


def embedded_traceback(text: str) -> Optional[tuple[list[tuple[str, int, str]], str]]:
    """The frames (outermost first) and the final `Type: message` line of the last traceback
    printed in `text`, or None when there is none."""
    start = text.rfind(_TRACEBACK)
    if start < 0:
        return None
    frames: list[tuple[str, int, str]] = []
    for line in text[start + len(_TRACEBACK):].splitlines()[1:]:
        match = _FRAME.match(line)
        if match:
            frames.append((match[1], int(match[2]), match[3]))
        elif line and not line[0].isspace():
            return (frames, line.strip()) if frames else None
    return None


_CURRENT: Any = None  # the Monitor of this process


def current() -> Any:
    return _CURRENT


def set_current(monitor: Any) -> None:
    global _CURRENT
    _CURRENT = monitor


class WorkerProbe:
    """Stands in for the DataLoader's worker_init_fn: runs the user's, then the checks'
    `worker_start` hooks. Picklable, for the spawn start method."""

    def __init__(self, original: Optional[Callable], loader_site: Optional[list], key: str, num_workers: int) -> None:
        self.original = original
        self.loader_site = loader_site
        self.key = key
        self.num_workers = num_workers

    def __call__(self, worker_id: int) -> None:
        if self.original is not None:
            self.original(worker_id)
        monitor = current()
        if monitor is not None:
            monitor.call("worker_start", self.loader_site, self.key, self.num_workers, worker_id)
