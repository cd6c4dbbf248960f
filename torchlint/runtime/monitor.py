"""Runtime monitors for `torchlint run` and `check_training_step`.

This module is loaded by path inside the user's processes (see boot/sitecustomize.py), so it
imports nothing from torchlint and only the standard library at import time. Torch hooks are
installed when the program imports torch. Every hook observes: it records events and returns
what the wrapped function returned, so the program computes exactly what it would without us.
The one deliberate intervention is the `--max-steps` budget, which ends the process with
SystemExit(0) after the N-th optimizer step.
"""

from __future__ import annotations

import atexit
import copy
import functools
import hashlib
import inspect
import json
import math
import os
import random
import re
import site
import sys
import sysconfig
import threading
import warnings
import weakref
from typing import Any, Callable, Optional

ENV_DIR = "TORCHLINT_RUNTIME_DIR"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_CAUSE = re.compile(r"[A-Za-z]+ error: ")


def _sentence(line: str) -> str:
    """The first sentence of an error line, at most 300 characters."""
    end = line.find(". ", 20)
    return (line if end < 0 else line[:end + 1])[:300]
ENV_MAX_STEPS = "TORCHLINT_RUNTIME_MAX_STEPS"

# Detailed events kept per (kind, site); later ones are only counted.
EVENT_CAP = 200
# Forwards per process whose first input is fingerprinted for the identical-batch check.
BATCH_HASH_LIMIT = 8
# Calls per loss site whose labels are range-checked (each check reads two scalars).
LABEL_CHECK_LIMIT = 50
DRAWS = 4
SOFTMAX_SITES = 256  # recent softmax outputs remembered (TL401 across lines)
# Autograd nodes a softmax output passes through unchanged in value on its way to the loss.
VIEW_NODES = ("ViewBackward0", "UnsafeViewBackward0", "ReshapeAliasBackward0", "TransposeBackward0",
              "PermuteBackward0", "TBackward0", "SliceBackward0", "SelectBackward0", "ExpandBackward0",
              "SqueezeBackward0", "SqueezeBackward1", "UnsqueezeBackward0", "CloneBackward0",
              "ToCopyBackward0", "AliasBackward0")
# TL421: a loss this many times the median of its first three values has diverged.
DIVERGENCE_RATIO = 1e4
DIVERGENCE_FLOOR = 1e-2  # a reference loss near 0 (a fit that converged) does not count as small

DROPOUTS = ("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout")
SOFTMAXES = ("softmax", "log_softmax", "softmin")
# Autograd nodes of the activations TL401 is about.
PROBABILITY_NODES = {"SoftmaxBackward0": "softmax", "SigmoidBackward0": "sigmoid"}

CLASS_INDEX_LOSSES = ("cross_entropy", "nll_loss")
MONITORED_LOSSES = CLASS_INDEX_LOSSES + ("binary_cross_entropy", "binary_cross_entropy_with_logits", "mse_loss",
                                         "l1_loss", "smooth_l1_loss", "huber_loss")
# Layers whose behaviour depends on train()/eval().
MODE_DEPENDENT = ("Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout",
                  "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm", "LazyBatchNorm1d",
                  "LazyBatchNorm2d", "LazyBatchNorm3d")

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))  # torchlint/


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


class _UserCode:
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
                return [self.realpath(code.co_filename), frame.f_lineno, code.co_name, code.co_firstlineno,
                        self._last_line(code)]
            frame = frame.f_back
        return None

    def _last_line(self, code: Any) -> int:
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


def _finite(tensor: Any) -> bool:
    """All values finite? A sum screens (NaN and Inf survive it) at a fraction of the cost of
    isfinite(); only a non-finite sum, which large finite values can also give, is checked exactly."""
    import torch

    if not tensor.dtype.is_floating_point or not tensor.numel():
        return True
    if math.isfinite(float(tensor.detach().sum())):
        return True
    return bool(torch.isfinite(tensor.detach()).all())



def _transparent_warn(real_warn: Callable) -> Callable:
    """`warnings.warn` that looks through the monitors' wrappers. torch warns its caller's line
    (`stacklevel=2`); when that caller is a wrapper here, the warning would name this file. It
    goes one frame further out instead, to the program's line: same text, filters, "once per
    location" registry and `catch_warnings(record=True)` entry as without the monitors."""

    @functools.wraps(real_warn)
    def warn(message: Any, category: Any = None, stacklevel: int = 1, source: Any = None, **kwargs: Any) -> None:
        level = stacklevel
        try:
            frame: Any = sys._getframe(1)  # the function that warns: stacklevel 1
            for _ in range(level - 1):
                frame = frame.f_back
            while frame is not None and frame.f_code.co_filename == __file__:
                frame, level = frame.f_back, level + 1
        except (AttributeError, ValueError, TypeError):  # a stack shorter than stacklevel
            level = stacklevel
        real_warn(message, category, level + 1, source, **kwargs)  # + 1: this frame

    return warn


def _producer(node: Any) -> tuple[Optional[str], Any]:
    """The probability activation behind a loss input, through views and reshapes (`.view`)."""
    for _ in range(8):
        if node is None:
            return None, None
        name = type(node).__name__
        if name in PROBABILITY_NODES:
            return PROBABILITY_NODES[name], node
        if name not in VIEW_NODES:
            return None, None
        node = next((fn for fn, _ in node.next_functions if fn is not None), None)
    return None, None


def _weights_only(args: tuple, kwargs: dict) -> Optional[bool]:
    """The weights_only torch.load will use (its own default rule), None if unknown."""
    if kwargs.get("weights_only") is not None:
        return bool(kwargs["weights_only"])
    if os.environ.get("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "0").lower() in ("1", "y", "yes", "true"):
        return False
    if os.environ.get("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "0").lower() in ("1", "y", "yes", "true"):
        return True
    serialization = sys.modules.get("torch.serialization")
    default = getattr(serialization, "_default_to_weights_only", None)
    pickle_module = kwargs.get("pickle_module", args[2] if len(args) > 2 else None)
    return bool(default(pickle_module)) if default is not None else None


def _only_negative_inf(tensor: Any) -> bool:
    """No NaN and no +inf (called on a tensor that is not all finite)."""
    import torch

    detached = tensor.detach()
    return not bool(torch.isnan(detached).any()) and not bool(torch.isposinf(detached).any())


def _fp32_norms_only(module: Any, dtypes: dict[str, int]) -> bool:
    """Low-precision weights with float32 normalization layers: the mixed-precision recipe
    (norm statistics kept in fp32), not a forgotten cast (TL222)."""
    if set(dtypes) - {"torch.float32", "torch.bfloat16", "torch.float16"} or "torch.float32" not in dtypes:
        return False
    for sub in module.modules():
        is_norm = "Norm" in type(sub).__name__
        for p in sub.parameters(recurse=False):
            if str(p.dtype) == "torch.float32" and not is_norm:
                return False
    return True


def _env_rank() -> int:
    try:
        return int(os.environ.get("RANK", "0") or 0)
    except ValueError:
        return 0


def _describe(tensor: Any) -> dict[str, Any]:
    return {"shape": list(tensor.shape), "dtype": str(tensor.dtype), "device": str(tensor.device)}


def _tensors(value: Any, depth: int = 0) -> list:
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if depth < 2 and isinstance(value, (list, tuple)):
        return [t for item in value for t in _tensors(item, depth + 1)]
    if depth < 2 and isinstance(value, dict):
        return [t for item in value.values() for t in _tensors(item, depth + 1)]
    return []


def _rounded(values: list) -> list:
    return [round(float(v), 8) for v in values]


def _guarded(hook: Callable) -> Callable:
    """A monitor problem is reported as an event; it never breaks the user's program."""

    @functools.wraps(hook)
    def guarded(self: "Monitor", *args: Any, **kwargs: Any) -> None:
        try:
            hook(self, *args, **kwargs)
        except Exception as exc:
            self.sink.write({"kind": "internal_error", "pid": os.getpid(), "where": hook.__name__,
                             "error": repr(exc)[:300]})

    return guarded


class Monitor:
    """Installs the hooks, keeps the per-process state, and writes events to a sink."""

    def __init__(self, sink: Any, max_steps: int = 0) -> None:
        self.sink = sink
        self.max_steps = max_steps
        self.user = _UserCode()
        self.counts: dict[str, int] = {}
        self.steps = 0
        self.local = threading.local()
        self.reported_nonfinite = False
        self.softmax_sites: dict[int, tuple] = {}  # id(SoftmaxBackward0 node) -> (node type, site)
        self.loss_tracks: dict[Any, dict] = {}  # backward site -> first loss values (TL421)
        self.masked_inf: Optional[dict] = None  # the first -inf-only activation (a mask?), for context
        self._last_screened: Any = lambda: None  # weakref to the last module output screened for NaN/Inf
        self.pending_roots: list[dict] = []  # grad-enabled root forwards since the last backward
        self.pending_eval: list[dict] = []  # backwards through an eval-mode forward, awaiting an optimizer step
        self.pending_data: list = []  # `.data` accesses while a forward awaited its backward
        self.roots: Any = None  # WeakSet of root modules seen
        self.checked_modules: Any = None
        self.batch_hashes = 0
        self.first_loss_sites: set = set()
        self._undo: list[Callable[[], None]] = []
        self._torch_hook: Any = None
        self._loader_sites: Any = None
        self._loss_sites: Any = None  # loss / softmax module -> where the program constructed it
        self._eval_sites: Any = None  # module -> where the program last called .eval() on it
        self.optimizers: Any = None
        self.zeroed_since_step = False
        self.backward_since_step = False
        self.last_grad_event: Optional[tuple] = None  # ("backward" | "zero_grad", site)
        self._loader_iterations = 0
        self.installed = False
        self.script: Optional[str] = None

    # -- events -------------------------------------------------------------------------

    def record(self, kind: str, site: Optional[list], **data: Any) -> None:
        always = data.pop("always", False)  # rare, decisive events are never capped
        key = f"{kind}@{site[0]}:{site[1]}" if site else kind
        n = self.counts.get(key, 0) + 1
        self.counts[key] = n
        if n <= EVENT_CAP or always:
            self.sink.write({"kind": kind, "site": site, "pid": os.getpid(), "rank": self._rank(),
                             "world": self._world(), "step": self.steps, **data})

    def dump(self) -> None:
        """Counters and the user files loaded so far (rewritten at each step and at exit)."""
        self.sink.write({"kind": "counts", "pid": os.getpid(), "rank": self._rank(), "counts": dict(self.counts),
                         "steps": self.steps, "files": self.user.files(), "main": self._main_file()})

    def _main_file(self) -> Optional[str]:
        # Python deletes __main__.__file__ when the script ends, before atexit: fall back to argv.
        path = getattr(sys.modules.get("__main__"), "__file__", None) or self.script
        return self.user.realpath(path) if isinstance(path, str) and self.user.is_user(path) else None

    def _dist(self) -> Any:
        torch = sys.modules.get("torch")
        if torch is None:
            return None
        dist = getattr(torch, "distributed", None)
        if dist is not None and dist.is_available() and dist.is_initialized():
            return dist
        return None

    def _rank(self) -> int:
        dist = self._dist()
        return dist.get_rank() if dist is not None else _env_rank()

    def _world(self) -> int:
        dist = self._dist()
        return dist.get_world_size() if dist is not None else 1

    # -- installation -------------------------------------------------------------------

    def install(self) -> None:
        if self.installed:
            return
        self.installed = True
        argv0 = sys.argv[0] if getattr(sys, "argv", None) else ""
        self.script = os.path.abspath(argv0) if argv0.endswith(".py") and os.path.isfile(argv0) else None
        self.sink.write({"kind": "process", "pid": os.getpid(), "ppid": os.getppid(), "argv": list(sys.argv),
                         "rank": _env_rank()})
        if "torch" in sys.modules and hasattr(sys.modules["torch"], "nn"):
            self.install_torch()
        else:
            self._torch_hook = _TorchImportHook(self)
            sys.meta_path.insert(0, self._torch_hook)

    def uninstall(self) -> None:
        if self._torch_hook in sys.meta_path:
            sys.meta_path.remove(self._torch_hook)
        for undo in reversed(self._undo):
            undo()
        self._undo.clear()
        self.installed = False

    def _patch(self, owner: Any, name: str, replacement: Any) -> None:
        had = name in vars(owner)
        original = vars(owner).get(name)
        setattr(owner, name, replacement)
        self._undo.append(lambda: setattr(owner, name, original) if had else delattr(owner, name))

    def install_torch(self) -> None:
        import torch
        import torch.nn.functional as F
        from torch.nn.modules import module as module_mod
        from torch.optim import optimizer as optim_mod
        from torch.utils.data import dataloader as dataloader_mod

        self.user.add_excluded(os.path.dirname(torch.__file__))
        self._patch(warnings, "warn", _transparent_warn(warnings.warn))
        self.roots = weakref.WeakSet()
        self.checked_modules = weakref.WeakSet()
        self._loader_sites = weakref.WeakKeyDictionary()
        self._loss_sites = weakref.WeakKeyDictionary()
        self._eval_sites = weakref.WeakKeyDictionary()
        self.optimizers = weakref.WeakSet()

        self._patch(torch.Tensor, "backward", self._wrap_backward(torch.Tensor.backward))
        self._patch(torch.autograd, "backward", self._wrap_backward(torch.autograd.backward))
        self._patch(torch.autograd, "grad", self._wrap_backward(torch.autograd.grad))
        self._patch_data_property(torch)
        for name in MONITORED_LOSSES:
            self._patch(F, name, self._wrap_loss(name, getattr(F, name)))
        for name in DROPOUTS:
            self._patch(F, name, self._wrap_dropout(name, getattr(F, name)))
        for name in SOFTMAXES:
            self._patch(F, name, self._wrap_softmax(name, getattr(F, name)))
        load = self._wrap_load(torch.serialization.load)
        self._patch(torch, "load", load)
        self._patch(torch.serialization, "load", load)
        self._patch(torch.optim.Optimizer, "zero_grad", self._wrap_zero_grad(torch.optim.Optimizer.zero_grad))
        self._patch(torch.nn.Module, "zero_grad", self._wrap_zero_grad(torch.nn.Module.zero_grad))
        self._patch(torch.nn.Module, "train", self._wrap_train(torch.nn.Module.train))

        handles = [module_mod.register_module_forward_pre_hook(self._forward_pre_hook),
                   module_mod.register_module_forward_hook(self._forward_hook, always_call=True),
                   optim_mod.register_optimizer_step_pre_hook(self._step_pre_hook),
                   optim_mod.register_optimizer_step_post_hook(self._step_post_hook)]
        self._undo.extend(h.remove for h in handles)

        # Where the program built each DataLoader, loss and softmax module: static findings sit there.
        self._patch(dataloader_mod.DataLoader, "__init__",
                    self._wrap_construction(dataloader_mod.DataLoader.__init__, self._loader_sites))
        for cls in (torch.nn.modules.loss._Loss, torch.nn.Softmax, torch.nn.Softmin, torch.nn.LogSoftmax):
            self._patch(cls, "__init__", self._wrap_construction(cls.__init__, self._loss_sites))
        monitor = self
        iter_init = dataloader_mod._MultiProcessingDataLoaderIter.__init__

        @functools.wraps(iter_init)
        def multi_init(iterator: Any, loader: Any) -> None:
            original = loader.worker_init_fn
            monitor._loader_iterations += 1
            key = f"{os.getpid()}:{monitor._loader_iterations}"
            probe = _WorkerProbe(original, monitor._loader_sites.get(loader), key, loader.num_workers)
            loader.worker_init_fn = probe
            try:
                iter_init(iterator, loader)
            finally:
                loader.worker_init_fn = original

        self._patch(dataloader_mod._MultiProcessingDataLoaderIter, "__init__", multi_init)

    # -- autograd -----------------------------------------------------------------------

    def _wrap_backward(self, original: Callable) -> Callable:
        monitor = self

        @functools.wraps(original)
        def backward(*args: Any, **kwargs: Any) -> Any:
            if getattr(monitor.local, "in_backward", False):
                return original(*args, **kwargs)
            import torch

            target = args[0] if args else (kwargs.get("tensors") or kwargs.get("outputs") or kwargs.get("self"))
            if isinstance(target, (list, tuple)) and target:
                target = target[0]
            site = monitor.user.site(2)
            event: dict[str, Any] = {"fn": original.__name__, "grad_enabled": torch.is_grad_enabled()}
            if isinstance(target, torch.Tensor):
                event.update(requires_grad=target.requires_grad, has_grad_fn=target.grad_fn is not None)
                monitor._before_backward(target, site)
            if original.__name__ != "grad":
                monitor._check_stale_gradients(site)
            monitor.local.in_backward = True
            try:
                return original(*args, **kwargs)
            except BaseException as exc:
                event["error"] = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
                raise
            finally:
                monitor.local.in_backward = False
                monitor.record("backward", site, **event)
                # autograd.grad and backward(inputs=...) leave the parameters' .grad alone.
                monitor._after_backward(site, original.__name__ != "grad" and kwargs.get("inputs") is None)
                if original.__name__ != "grad":
                    monitor.backward_since_step = True
                    monitor.last_grad_event = ("backward", site)
                monitor.pending_roots.clear()
                monitor.pending_data.clear()

        return backward

    @_guarded
    def _before_backward(self, loss: Any, site: Optional[list]) -> None:
        import torch

        if loss.numel() == 1 and loss.dtype.is_floating_point and not self.reported_nonfinite:
            value = float(loss.detach())
            if not math.isfinite(value):
                self.reported_nonfinite = True
                self.record("nonfinite", site, where="loss", value=str(value), masked_inf=self.masked_inf,
                            always=True)
            else:
                self._track_divergence(value, site)
        written = [p for p in self.pending_data if p["assigned"] or p["alias"]._version > 0]
        if not written:
            return
        saved = _saved_storages(loss) if loss.grad_fn is not None else {}
        names = self._parameter_names()
        for access in written:
            tensor = access["ref"]()
            storage = access["storage"]
            self.record("data_write", access["site"], backward_site=site, forward_site=access["forward_site"],
                        saved_by=saved.get(storage), tensor=access["desc"],
                        name=names.get(id(tensor)) if tensor is not None else None, always=True)
        del torch

    @_guarded
    def _after_backward(self, site: Optional[list], accumulates: bool) -> None:
        """TL720: a backward that ran through an eval-mode forward (its output's hook fired) waits
        for an optimizer step over that module's parameters; a zero_grad in between drops it."""
        for entry in self.pending_roots:
            for handle in entry.get("handles", ()):
                handle.remove()
            module = entry["ref"]()
            if accumulates and entry.get("reached") and module is not None:
                self.pending_eval.append({"ref": entry["ref"], "site": site, "forward_site": entry["site"],
                                          "layers": entry["layers"], "module": type(module).__name__,
                                          "eval_site": self._eval_sites.get(module)})
        del self.pending_eval[:-16]

    @_guarded
    def _resolve_eval(self, owner: Any, stepped: bool) -> None:
        """`owner` (an optimizer stepping or zeroing, or a module zeroing) settles the pending
        eval-mode backwards over its parameters: reported at a step, dropped at a zero_grad."""
        if not self.pending_eval:
            return
        if hasattr(owner, "param_groups"):
            ids = {id(p) for group in owner.param_groups for p in group["params"]}
        else:
            ids = {id(p) for p in owner.parameters()}
        kept = []
        for entry in self.pending_eval:
            module = entry["ref"]()
            if module is None or not any(id(p) in ids for p in module.parameters()):
                kept.append(entry)
            elif stepped:
                self.record("eval_backward", entry["site"], module=entry["module"],
                            forward_site=entry["forward_site"], layers=entry["layers"], eval_site=entry["eval_site"])
        self.pending_eval = kept

    def _track_divergence(self, value: float, site: Optional[list]) -> None:
        """TL421: a finite loss that grew by DIVERGENCE_RATIO over its first values, once per site."""
        key = tuple(site[:2]) if site else None
        track = self.loss_tracks.setdefault(key, {"first": [], "reported": False})
        if len(track["first"]) < 3:
            track["first"].append(abs(value))
            return
        reference = max(sorted(track["first"])[1], DIVERGENCE_FLOOR)  # the median of the first three
        if not track["reported"] and abs(value) >= DIVERGENCE_RATIO * reference:
            track["reported"] = True
            self.record("diverged", site, first=track["first"], value=value, always=True)

    def _patch_data_property(self, torch: Any) -> None:
        descriptor = torch._C.TensorBase.__dict__["data"]
        monitor = self

        def get_data(tensor: Any) -> Any:
            alias = descriptor.__get__(tensor)
            frame = sys._getframe(1)
            if monitor.user.is_user(frame.f_code.co_filename):
                monitor._note_data_access(tensor, alias, assigned=False)
            return alias

        def set_data(tensor: Any, value: Any) -> None:
            descriptor.__set__(tensor, value)
            if monitor.user.is_user(sys._getframe(1).f_code.co_filename):
                monitor._note_data_access(tensor, None, assigned=True)

        self._patch(torch.Tensor, "data", property(get_data, set_data, doc=descriptor.__doc__))

    @_guarded
    def _note_data_access(self, tensor: Any, alias: Any, assigned: bool) -> None:
        site = self.user.site(3)
        key = f"data@{site[0]}:{site[1]}" if site else "data"
        self.counts[key] = self.counts.get(key, 0) + 1
        if not tensor.requires_grad or not self.pending_roots or len(self.pending_data) > 10_000:
            return
        if assigned and self.pending_data and self.pending_data[-1]["ref"]() is tensor:
            self.pending_data[-1]["assigned"] = True  # `p.data -= x`: the getter saw it first
            return
        self.pending_data.append({
            "ref": weakref.ref(tensor), "alias": alias if alias is not None else tensor, "assigned": assigned,
            "site": site, "storage": tensor.untyped_storage().data_ptr(), "desc": _describe(tensor),
            "forward_site": self.pending_roots[-1]["site"],
        })

    def _parameter_names(self) -> dict[int, str]:
        names: dict[int, str] = {}
        for root in list(self.roots or ()):
            for name, param in root.named_parameters():
                names.setdefault(id(param), name)
        return names

    # -- modules ------------------------------------------------------------------------

    def _depth(self) -> int:
        return getattr(self.local, "depth", 0)

    @_guarded
    def _forward_pre_hook(self, module: Any, args: Any) -> None:
        depth = self._depth()
        self.local.depth = depth + 1
        if depth:
            return
        import torch

        # Global pre-hooks get no kwargs: `model(input_ids=x)` (Hugging Face style) passes its
        # tensors there, so read them from Module._call_impl's frame (TL220, TL520).
        caller = sys._getframe(2)  # Module._call_impl, or its `inner` closure
        kwargs = caller.f_locals.get("kwargs") if caller.f_code.co_name in ("_call_impl", "inner") else None
        if kwargs and isinstance(kwargs, dict):
            args = (*args, *kwargs.values())

        self.roots.add(module)
        site = self.user.site(2)
        if torch.is_grad_enabled():
            self.pending_roots.append({"ref": weakref.ref(module), "site": site})
            if len(self.pending_roots) > 64:  # forwards never backpropagated (an eval loop without no_grad)
                del self.pending_roots[:-64]
        if module not in self.checked_modules:
            self.checked_modules.add(module)
            self._check_devices_and_dtypes(module, args, site)
        if self.batch_hashes < BATCH_HASH_LIMIT and torch.is_grad_enabled() and module.training:
            dist = self._dist()
            inputs = _tensors(args)
            if dist is not None and dist.get_world_size() > 1 and inputs:
                self.batch_hashes += 1
                self.record("batch", site, index=self.batch_hashes, hash=_fingerprint(inputs[0]),
                            input=_describe(inputs[0]), module=type(module).__name__)

    def _check_devices_and_dtypes(self, module: Any, args: Any, site: Optional[list]) -> None:
        params = list(module.parameters())
        if not params:
            return
        param_devices = sorted({str(p.device) for p in params})
        input_devices = sorted({str(t.device) for t in _tensors(args)})
        if input_devices and len(param_devices) == 1 and input_devices != param_devices:
            self.record("device_mismatch", site, module=type(module).__name__, params=param_devices,
                        inputs=input_devices, always=True)
        dtypes: dict[str, int] = {}
        for p in params:
            if p.dtype.is_floating_point:
                dtypes[str(p.dtype)] = dtypes.get(str(p.dtype), 0) + 1
        if len(dtypes) > 1 and not _fp32_norms_only(module, dtypes):
            by_dtype: dict[str, list[str]] = {}
            for name, p in module.named_parameters():
                by_dtype.setdefault(str(p.dtype), []).append(name)
            self.record("mixed_dtypes", site, module=type(module).__name__, dtypes=dtypes,
                        examples={k: v[:3] for k, v in by_dtype.items()}, always=True)

    @_guarded
    def _forward_hook(self, module: Any, args: Any, output: Any) -> None:
        self.local.depth = max(0, self._depth() - 1)
        if not self.local.depth and not module.training and self.pending_roots:
            self._watch_eval_forward(module, output)
        if self.reported_nonfinite:
            return

        outputs = _tensors(output)
        if len(outputs) == 1 and outputs[0] is self._last_screened():
            return  # a container returning its last layer's output: already screened
        for tensor in outputs:
            self._last_screened = weakref.ref(tensor)
            if _finite(tensor):
                continue
            names = {id(m): n for root in list(self.roots) for n, m in root.named_modules()}
            if _only_negative_inf(tensor):
                # -inf and finite values only: a mask (causal attention, invalid actions) that a
                # softmax or masked_fill turns into 0. It is a problem only if a NaN/Inf follows.
                if self.masked_inf is None:
                    self.masked_inf = {"module": type(module).__name__, "name": names.get(id(module)),
                                       "site": self.user.site(2), "step": self.steps}
                continue
            inputs_finite = all(_finite(t) or _only_negative_inf(t) for t in _tensors(args))
            bad_params = [n for n, p in module.named_parameters(recurse=False) if not _finite(p)]
            self.reported_nonfinite = True
            self.record("nonfinite", self.user.site(2), where="activation", module=type(module).__name__,
                        name=names.get(id(module)), inputs_finite=inputs_finite, output=_describe(tensor),
                        bad_params=bad_params, masked_inf=self.masked_inf, always=True)
            return

    def _watch_eval_forward(self, module: Any, output: Any) -> None:
        """An eval-mode root forward with Dropout/BatchNorm layers and parameters that train: a
        hook on its outputs tells whether a backward runs through it (TL720)."""
        entry = self.pending_roots[-1]
        if entry["ref"]() is not module or not any(p.requires_grad for p in module.parameters()):
            return
        layers = sorted({type(m).__name__ for m in module.modules() if type(m).__name__ in MODE_DEPENDENT})
        if not layers:
            return
        entry.update(layers=layers, handles=[])

        def reached(grad: Any) -> None:
            entry["reached"] = True

        for tensor in _tensors(output):
            if tensor.requires_grad:
                entry["handles"].append(tensor.register_hook(reached))

    # -- optimizers ---------------------------------------------------------------------

    @_guarded
    def _step_pre_hook(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        import torch

        site = self.user.site(2)
        self.optimizers.add(optimizer)
        self._resolve_eval(optimizer, stepped=True)
        if self.backward_since_step and self.last_grad_event and self.last_grad_event[0] == "zero_grad":
            self.record("zeroed_before_step", self.last_grad_event[1], step_site=site, always=True)
        every = [p for group in optimizer.param_groups for p in group["params"]]
        params = [p for p in every if p.requires_grad]
        dead = [p for p in params if p.grad is None]
        # A plain tensor (not an nn.Parameter) without requires_grad can never get a gradient: a
        # forgotten requires_grad=True. Frozen nn.Parameters are deliberate and not reported.
        inert = [p for p in every if not p.requires_grad and not isinstance(p, torch.nn.Parameter)]
        names = self._parameter_names() if dead or inert else {}

        def label(p: Any) -> str:
            return names.get(id(p), f"<tensor of shape {tuple(p.shape)}>")

        self.record("step", site, optimizer=type(optimizer).__name__, total=len(params), count=len(every),
                    dead=[label(p) for p in dead], inert=[label(p) for p in inert])
        if not self.reported_nonfinite:
            for p in params:
                if p.grad is not None and not _finite(p.grad):
                    self.reported_nonfinite = True
                    names = names or self._parameter_names()
                    self.record("nonfinite", site, where="gradient", name=names.get(id(p)), tensor=_describe(p),
                                masked_inf=self.masked_inf, always=True)
                    break

    def _step_post_hook(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        self.steps += 1
        self.zeroed_since_step = self.backward_since_step = False
        if self.steps <= 10 or self.steps % 10 == 0:  # atexit writes the last; this guards against a kill
            self.dump()
        if self.max_steps and self.steps >= self.max_steps and not getattr(self.local, "stopping", False):
            self.local.stopping = True
            self.sink.write({"kind": "budget", "pid": os.getpid(), "rank": self._rank(), "steps": self.steps})
            raise SystemExit(0)

    @_guarded
    def _check_stale_gradients(self, site: Optional[list]) -> None:
        """TL103: a backward after an optimizer step with no zero_grad since adds to old gradients."""
        if not self.steps or self.zeroed_since_step or self.backward_since_step:
            return
        for optimizer in list(self.optimizers):
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is not None and bool(p.grad.any()):
                        name = self._parameter_names().get(id(p))
                        self.record("stale_grads", site, name=name, norm=round(float(p.grad.norm()), 6))
                        return

    def _wrap_zero_grad(self, original: Callable) -> Callable:
        monitor = self

        @functools.wraps(original)
        def zero_grad(owner: Any, *args: Any, **kwargs: Any) -> Any:
            result = original(owner, *args, **kwargs)
            site = monitor.user.site(2)
            monitor._resolve_eval(owner, stepped=False)
            monitor.zeroed_since_step = True
            monitor.last_grad_event = ("zero_grad", site)
            monitor.record("zero_grad", site, after_backward=monitor.backward_since_step)
            return result

        return zero_grad

    def _wrap_train(self, original: Callable) -> Callable:
        monitor = self

        @functools.wraps(original)
        def train(module: Any, mode: bool = True) -> Any:
            if getattr(monitor.local, "in_train", False):
                return original(module, mode)
            monitor.local.in_train = True
            try:
                return original(module, mode)
            finally:
                monitor.local.in_train = False
                if not mode:
                    site = monitor.user.site(2)
                    monitor._eval_sites[module] = site
                    key = f"eval@{site[0]}:{site[1]}" if site else "eval"
                    monitor.counts[key] = monitor.counts.get(key, 0) + 1

        return train

    def _wrap_construction(self, original: Callable, sites: Any) -> Callable:
        monitor = self

        @functools.wraps(original)
        def init(instance: Any, *args: Any, **kwargs: Any) -> None:
            original(instance, *args, **kwargs)
            site = monitor.user.site(2)
            if site is not None:
                sites[instance] = site

        return init

    def _owner(self, frame: Any) -> Any:
        """The nn.Module whose method called the wrapped function, if any."""
        import torch

        owner = frame.f_locals.get("self") if frame is not None else None
        return owner if isinstance(owner, torch.nn.Module) else None

    def _wrap_dropout(self, name: str, original: Callable) -> Callable:
        signature = inspect.signature(original)
        monitor = self

        @functools.wraps(original)
        def dropout(*args: Any, **kwargs: Any) -> Any:
            owner = monitor._owner(sys._getframe(1))
            # nn.Dropout passes its own mode; only functional calls from the program's modules matter.
            if owner is not None and type(owner).__module__.split(".")[0] != "torch":
                try:
                    bound = signature.bind(*args, **kwargs)
                    bound.apply_defaults()
                    monitor.record("dropout", monitor.user.site(2), fn=name, p=bound.arguments.get("p"),
                                   training_arg=bool(bound.arguments.get("training")),
                                   module_training=owner.training, module=type(owner).__name__)
                except Exception as exc:
                    monitor.sink.write({"kind": "internal_error", "pid": os.getpid(), "where": name,
                                        "error": repr(exc)[:300]})
            return original(*args, **kwargs)

        return dropout

    def _wrap_softmax(self, name: str, original: Callable) -> Callable:
        monitor = self

        @functools.wraps(original)
        def softmax(*args: Any, **kwargs: Any) -> Any:
            dim = args[1] if len(args) > 1 else kwargs.get("dim")
            tensor = args[0] if args else kwargs.get("input")
            if dim is None and tensor is not None and hasattr(tensor, "dim"):
                ndim = tensor.dim()
                owner = monitor._owner(sys._getframe(1))
                monitor.record("implicit_softmax", monitor.user.site(2), fn=name, shape=list(tensor.shape),
                               implicit_dim=0 if ndim in (0, 1, 3) else 1,
                               module_site=monitor._loss_sites.get(owner) if owner is not None else None)
                # torch's "implicit dimension" warning must still point at the caller, one frame up.
                if len(args) > 2:
                    args = (*args[:2], args[2] + 1, *args[3:])
                else:
                    kwargs["_stacklevel"] = kwargs.get("_stacklevel", 3) + 1
            result = original(*args, **kwargs)
            if name == "softmax" and getattr(result, "grad_fn", None) is not None:
                monitor._note_softmax(result.grad_fn)
            return result

        return softmax

    @_guarded
    def _note_softmax(self, node: Any) -> None:
        """Where a softmax output came from, for TL401 when the loss is on another line."""
        if len(self.softmax_sites) >= SOFTMAX_SITES:
            self.softmax_sites.pop(next(iter(self.softmax_sites)))
        self.softmax_sites[id(node)] = (type(node).__name__, self.user.site(3))

    # -- losses -------------------------------------------------------------------------

    def _wrap_loss(self, name: str, original: Callable) -> Callable:
        signature = inspect.signature(original)
        monitor = self

        @functools.wraps(original)
        def loss(*args: Any, **kwargs: Any) -> Any:
            if getattr(monitor.local, "in_loss", False):
                return original(*args, **kwargs)
            try:
                bound = signature.bind(*args, **kwargs)
                bound.apply_defaults()
                event = monitor._loss_event(name, bound.arguments, sys._getframe(1))
            except Exception as exc:  # never break the program over a monitor problem
                monitor.sink.write({"kind": "internal_error", "pid": os.getpid(), "where": name, "error": repr(exc)})
                return original(*args, **kwargs)
            monitor.local.in_loss = True
            try:
                result = original(*args, **kwargs)
            except BaseException as exc:
                event["error"] = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
                monitor.record("loss", event.pop("site"), always=True, **event)
                raise
            finally:
                monitor.local.in_loss = False
            try:
                monitor._after_loss(name, event, result)
            except Exception as exc:
                monitor.sink.write({"kind": "internal_error", "pid": os.getpid(), "where": name, "error": repr(exc)})
            return result

        return loss

    def _after_loss(self, name: str, event: dict[str, Any], result: Any) -> None:
        site = event.pop("site")
        key = (name, tuple(site[:2]) if site else None)
        if (name == "cross_entropy" and self.steps == 0 and key not in self.first_loss_sites
                and event.get("class_index") and event["reduction"] == "mean" and result.numel() == 1):
            self.first_loss_sites.add(key)  # TL420 looks at the loss before any step
            event["first_value"] = float(result.detach())
        self.record("loss", site, **event)

    def _loss_event(self, name: str, arguments: dict[str, Any], caller: Any) -> dict[str, Any]:
        import torch

        inp, target = arguments.get("input"), arguments.get("target")
        owner = caller.f_locals.get("self") if caller is not None else None
        module_site = self._loss_sites.get(owner) if isinstance(owner, torch.nn.Module) else None
        reduction = arguments.get("reduction", "mean")
        if arguments.get("size_average") is not None or arguments.get("reduce") is not None:
            from torch.nn import _reduction

            reduction = _reduction.legacy_get_string(arguments.get("size_average"), arguments.get("reduce"),
                                                     emit_warning=False)  # the loss itself warns the user
        event: dict[str, Any] = {"fn": name, "site": self.user.site(3), "module_site": module_site,
                                 "module": type(owner).__name__ if isinstance(owner, torch.nn.Module) else None,
                                 "reduction": reduction, "grad_enabled": torch.is_grad_enabled()}
        if not isinstance(inp, torch.Tensor) or not isinstance(target, torch.Tensor):
            return event
        event.update(input=_describe(inp), target=_describe(target))
        producer, node = _producer(inp.grad_fn)
        if producer:
            event["input_producer"] = producer
            known = self.softmax_sites.get(id(node))
            if known is not None and known[0] == type(node).__name__:
                event["producer_site"] = known[1]
        if name in CLASS_INDEX_LOSSES:
            ignore_index = arguments.get("ignore_index", -100)
            class_index = target.dim() == inp.dim() - 1
            classes = inp.shape[1] if inp.dim() > 1 else inp.shape[0]
            event.update(ignore_index=ignore_index, class_index=class_index, classes=classes, input_dim=inp.dim(),
                         label_smoothing=arguments.get("label_smoothing", 0.0),
                         weighted=arguments.get("weight") is not None)
            key = f"labels@{event['site'][0]}:{event['site'][1]}" if event["site"] else "labels"
            checked = self.counts.get(key, 0)
            if ("input_producer" not in event and inp.dtype.is_floating_point and inp.dim() >= 2
                    and checked < LABEL_CHECK_LIMIT and inp.numel()):
                sums = inp.detach().sum(dim=1)
                if bool(inp.min() >= 0) and bool(((sums - 1).abs() < 1e-4).all()):
                    event["input_rows_sum_to_one"] = True
            if class_index and not target.dtype.is_floating_point and target.numel():
                counted = target != ignore_index
                event["counted"] = int(counted.sum())
                if checked < LABEL_CHECK_LIMIT:
                    self.counts[key] = checked + 1
                    kept = target[counted]
                    if kept.numel():
                        event["label_range"] = [int(kept.min()), int(kept.max())]
            elif not class_index and target.dtype.is_floating_point and target.numel():
                event["counted"] = target.numel() // max(1, classes)
                if checked < LABEL_CHECK_LIMIT:
                    self.counts[key] = checked + 1
                    row_sums = target.detach().reshape(-1, classes).sum(dim=-1) if target.dim() == 2 else None
                    event["prob_range"] = [float(target.min()), float(target.max())]
                    if row_sums is not None:
                        event["row_sums"] = _rounded(row_sums[:4].tolist())
        else:
            event["counted"] = inp.numel()
            if name.startswith("binary_cross_entropy") and target.numel():
                event["prob_range"] = [float(target.min()), float(target.max())]
        return event

    # -- checkpoints ----------------------------------------------------------------------

    def _wrap_load(self, original: Callable) -> Callable:
        monitor = self

        @functools.wraps(original)
        def load(*args: Any, **kwargs: Any) -> Any:
            site = monitor.user.site(2)
            event: dict[str, Any] = {"weights_only": _weights_only(args, kwargs)}
            try:
                return original(*args, **kwargs)
            except BaseException as exc:
                lines = [_ANSI.sub("", line).strip() for line in str(exc).splitlines() if line.strip()]
                event["error"] = f"{type(exc).__name__}: {_sentence(lines[0]) if lines else ''}"
                event["detail"] = [_sentence(line) for line in lines[1:20] if _CAUSE.match(line)][:1]
                raise
            finally:
                monitor.record("load", site, **event)

        return load

    # -- crashes ------------------------------------------------------------------------

    def record_crash(self, kind: type, value: BaseException, tb: Any) -> None:
        frames = []
        while tb is not None:
            code = tb.tb_frame.f_code
            if self.user.is_user(code.co_filename):
                frames.append([self.user.realpath(code.co_filename), tb.tb_lineno, code.co_name, code.co_firstlineno,
                               self._last_line_of(code)])
            tb = tb.tb_next
        lines = [_ANSI.sub("", line).strip() for line in str(value).strip().splitlines()]
        lines = [line for line in lines if line]
        name = kind.__qualname__ if kind.__module__ in ("builtins", "__main__") else f"{kind.__module__}.{kind.__qualname__}"
        # The first sentence, and the lines that name a cause (torch.load's "WeightsUnpickler error: ...").
        detail = [_sentence(line) for line in lines[1:20] if _CAUSE.match(line)][:2]
        self.record("crash", frames[-1] if frames else None, always=True, exception=name,
                    message=_sentence(lines[0]) if lines else "", detail=detail, frames=frames[-CRASH_FRAMES:])
        self.dump()

    def _last_line_of(self, code: Any) -> int:
        return self.user._last_line(code)

    # -- DataLoader workers -------------------------------------------------------------

    def record_worker_streams(self, probe: "_WorkerProbe", worker_id: int) -> None:
        from torch.utils.data import get_worker_info

        info = get_worker_info()
        dataset = info.dataset if info is not None else None
        streams, global_streams = _worker_draws(dataset)
        self.sink.write({"kind": "worker_rng", "pid": os.getpid(), "site": probe.loader_site, "loader": probe.key,
                         "worker_id": worker_id, "num_workers": probe.num_workers,
                         "dataset": type(dataset).__name__, "streams": streams, "global": global_streams})
        self._watch_first_fetch(probe, worker_id, dataset, streams, global_streams)

    def _watch_first_fetch(self, probe: "_WorkerProbe", worker_id: int, dataset: Any, streams: dict,
                           global_streams: dict) -> None:
        """After this worker's first batch, which streams moved? Identical streams that the
        dataset never draws from (an RNG used only in __init__) are harmless (TL320/TL301)."""
        from torch.utils.data._utils import fetch

        monitor = self
        fetchers = (fetch._MapDatasetFetcher, fetch._IterableDatasetFetcher)
        originals = {cls: cls.__dict__["fetch"] for cls in fetchers if "fetch" in cls.__dict__}

        def wrap(original: Callable) -> Callable:
            @functools.wraps(original)
            def first_fetch(fetcher: Any, *args: Any, **kwargs: Any) -> Any:
                for cls, method in originals.items():  # once per worker: put torch back first
                    cls.fetch = method  # type: ignore[method-assign]
                result = original(fetcher, *args, **kwargs)
                try:
                    after, after_global = _worker_draws(dataset)
                    drawn = [f"streams:{n}" for n, d in streams.items() if after.get(n) != d]
                    drawn += [f"global:{n}" for n, d in global_streams.items() if after_global.get(n) != d]
                    monitor.sink.write({"kind": "worker_rng_drawn", "pid": os.getpid(), "loader": probe.key,
                                        "worker_id": worker_id, "drawn": drawn})
                except Exception as exc:
                    monitor.sink.write({"kind": "internal_error", "pid": os.getpid(), "where": "worker fetch",
                                        "error": repr(exc)[:300]})
                return result

            return first_fetch

        for cls, method in originals.items():
            cls.fetch = wrap(method)  # type: ignore[method-assign]


def _worker_draws(dataset: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The next draws of the dataset's RNG objects and of the global generators, from copies."""
    import torch

    streams: dict[str, Any] = {}
    for label, rng in _dataset_rngs(dataset):
        draws = _peek(rng)
        if draws is not None:
            streams[label] = draws
    global_streams: dict[str, Any] = {"random": _peek(random.Random(0), state=random.getstate())}
    np = sys.modules.get("numpy")
    if np is not None:
        legacy = np.random.RandomState()
        legacy.set_state(np.random.get_state())
        global_streams["numpy.random"] = _rounded(legacy.random_sample(DRAWS).tolist())
    generator = torch.Generator()
    generator.set_state(torch.get_rng_state())
    global_streams["torch"] = _rounded(torch.rand(DRAWS, generator=generator).tolist())
    return streams, global_streams


def _saved_storages(loss: Any, limit: int = 10_000) -> dict[int, str]:
    """Storage pointer -> autograd node name, for every tensor saved for this backward."""
    import torch

    out: dict[int, str] = {}
    seen: set = set()
    stack = [loss.grad_fn]
    while stack and len(seen) < limit:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        for attr in dir(node):
            if not attr.startswith("_saved_"):
                continue
            try:
                value = getattr(node, attr)
            except Exception:  # freed or not a tensor
                continue
            for tensor in value if isinstance(value, (list, tuple)) else (value,):
                if isinstance(tensor, torch.Tensor):
                    out.setdefault(tensor.untyped_storage().data_ptr(), type(node).__name__)
        stack.extend(fn for fn, _ in node.next_functions)
    return out


def _fingerprint(tensor: Any) -> str:
    data = tensor.detach().cpu().contiguous()
    try:
        raw = data.numpy().tobytes()
    except Exception:  # dtypes numpy lacks (bfloat16) or no numpy
        raw = repr(data.float().tolist()).encode()
    return hashlib.sha1(raw + str(tuple(data.shape)).encode()).hexdigest()[:16]


def _dataset_rngs(dataset: Any, prefix: str = "self", depth: int = 0) -> list:
    found: list = []
    attributes = getattr(dataset, "__dict__", None)
    if not isinstance(attributes, dict):
        return found
    for name, value in attributes.items():
        kind = _rng_kind(value)
        if kind is not None:
            found.append((f"{prefix}.{name} ({kind})", value))
        elif depth < 1 and hasattr(value, "__getitem__") and hasattr(value, "__dict__") and not isinstance(value, type):
            found.extend(_dataset_rngs(value, f"{prefix}.{name}", depth + 1))
        elif depth < 1 and isinstance(value, (list, tuple)) and len(value) <= 16:  # ConcatDataset.datasets
            for index, item in enumerate(value):
                found.extend(_dataset_rngs(item, f"{prefix}.{name}[{index}]", depth + 1))
    return found


def _rng_kind(value: Any) -> Optional[str]:
    if isinstance(value, random.Random):
        return "random.Random"
    np = sys.modules.get("numpy")
    if np is not None:
        if isinstance(value, np.random.Generator):
            return "numpy.random.Generator"
        if isinstance(value, np.random.RandomState):
            return "numpy.random.RandomState"
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Generator) and value.device.type == "cpu":
        return "torch.Generator"
    return None


def _peek(rng: Any, state: Any = None) -> Optional[list]:
    """The next draws of `rng`, taken from a copy so the program's own stream is untouched."""
    if isinstance(rng, random.Random):
        twin = random.Random(0)
        twin.setstate(state if state is not None else rng.getstate())
        return _rounded([twin.random() for _ in range(DRAWS)])
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(rng, torch.Generator):
        twin = torch.Generator()
        twin.set_state(rng.get_state())
        return _rounded(torch.rand(DRAWS, generator=twin).tolist())
    twin = copy.deepcopy(rng)
    draw = getattr(twin, "random", None) or getattr(twin, "random_sample", None)
    return _rounded(list(draw(DRAWS))) if draw is not None else None


class _WorkerProbe:
    """Stands in for the DataLoader's worker_init_fn: runs the user's, then records each worker's
    first draws from copies of its RNGs. Picklable, for the spawn start method."""

    def __init__(self, original: Optional[Callable], loader_site: Optional[list], key: str, num_workers: int) -> None:
        self.original = original
        self.loader_site = loader_site
        self.key = key
        self.num_workers = num_workers

    def __call__(self, worker_id: int) -> None:
        if self.original is not None:
            self.original(worker_id)
        monitor = current()
        if monitor is None:
            return
        try:
            monitor.record_worker_streams(self, worker_id)
        except Exception as exc:
            monitor.sink.write({"kind": "internal_error", "pid": os.getpid(), "where": "worker", "error": repr(exc)})


class _TorchImportHook:
    """A meta-path finder that installs the torch hooks right after `import torch` finishes."""

    def __init__(self, monitor: Monitor) -> None:
        self.monitor = monitor

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != "torch":
            return None
        import importlib.util

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


_CURRENT: Optional[Monitor] = None


def current() -> Optional[Monitor]:
    return _CURRENT


def set_current(monitor: Optional[Monitor]) -> None:
    global _CURRENT
    _CURRENT = monitor


def start_from_environment() -> Optional[Monitor]:
    """Called by the sitecustomize `torchlint run` puts on PYTHONPATH."""
    directory = os.environ.get(ENV_DIR)
    if not directory or not os.path.isdir(directory):
        return None
    monitor = Monitor(FileSink(directory), max_steps=int(os.environ.get(ENV_MAX_STEPS, "0") or 0))
    set_current(monitor)
    monitor.install()
    atexit.register(monitor.dump)
    sys.excepthook = _crash_hook(monitor, sys.excepthook)
    return monitor


CRASH_FRAMES = 12  # user frames of a crash's traceback kept, innermost last


def _crash_hook(monitor: Monitor, previous: Callable) -> Callable:
    """Records the exception that ends the process (the crash is a result), then hands it to the
    hook that was there, which prints the traceback exactly as before."""

    def excepthook(kind: type, value: BaseException, tb: Any) -> None:
        if not issubclass(kind, KeyboardInterrupt):
            try:
                monitor.record_crash(kind, value, tb)
            except Exception:  # the traceback must still be printed
                pass
        previous(kind, value, tb)

    return excepthook

