"""Runtime monitors for `torchlint run` and `check_training_step`: the generic machinery (the
hooks into torch, step tracking, the event stream). What each check records is its monitor, a
class beside the rule (`evidence.monitor`, `RuntimeCheck.monitor`) that
scripts/generate_all.py copies into `monitors_<family>.py`; the hooks it may define are `HOOKS`.

This module is loaded by path inside the user's processes (see boot/sitecustomize.py), so it
imports nothing from torchlint and only the standard library at import time. Torch hooks are
installed when the program imports torch. Every hook observes: it records events and returns
what the wrapped function returned, so the program computes exactly what it would without us.
The one deliberate intervention is the `--max-steps` budget, which ends the process with
SystemExit(0) after the N-th optimizer step.
"""

from __future__ import annotations

import atexit
import functools
import importlib
import importlib.util
import os
import sys
import threading
import time
import warnings
import weakref
from typing import Any, Callable, Optional


def _sibling(name: str) -> Any:
    """A module beside this one: imported as part of torchlint when this module is (the
    in-process API), else loaded by path under a private name (the program's Python need not
    have torchlint), registered first so that pickled objects of it resolve in spawned workers."""
    if __name__.startswith("torchlint."):
        return importlib.import_module(f"{__name__.rpartition('.')[0]}.{name}")
    key = f"_torchlint_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, os.path.join(os.path.dirname(__file__), f"{name}.py"))
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        sys.modules[key] = module
        spec.loader.exec_module(module)  # type: ignore[union-attr]
    return sys.modules[key]


def _check_monitors() -> list[tuple[str, Any]]:
    """(code, class) of every check's monitor, in code order: the generated monitors_<family>.py
    files beside this module."""
    found: list[tuple[str, Any]] = []
    for name in sorted(os.listdir(os.path.dirname(os.path.abspath(__file__)))):
        if name.startswith("monitors_") and name.endswith(".py"):
            found += _sibling(name[:-3]).MONITORS
    return sorted(found, key=lambda pair: pair[0])


_support = _sibling("support")
_crash_hooks = _sibling("crash_hooks")
_wrappers = _sibling("wrappers")
_recorder = _sibling("recorder")
MONITORS = _check_monitors()

ENV_DIR = "TORCHLINT_RUNTIME_DIR"
ENV_MAX_STEPS = "TORCHLINT_RUNTIME_MAX_STEPS"

# Detailed events kept per (kind, site); later ones are only counted.
EVENT_CAP = 200

# The hooks a check's monitor may define, each called as `hook(monitor, ...)`, in code order
# of the checks; a hook that raises is reported as an internal_error event and the others run.
HOOKS = {
    "install": "(m, torch): after the generic hooks are in, patch what else the check watches",
    "first_forward": "(m, module, args, site): the first root (outermost) forward of each module",
    "root_forward": "(m, module, args, site): every root (outermost) module forward, before it runs",
    "forward": "(m, module, args, output, root): after every module forward",
    "before_backward": "(m, target, site, fn): backward/autograd.backward/autograd.grad is called; target may be None",
    "after_backward": "(m, site, fn, accumulates): it returned or raised; accumulates: it wrote .grad",
    "step": "(m, optimizer, site, event): before an optimizer step; may add fields to its `step` event",
    "zero_grad": "(m, owner, site): after optimizer.zero_grad() / module.zero_grad()",
    "loss": "(m, name, inp, target, event, label_budget): a watched loss is called; may add fields to `loss`",
    "after_loss": "(m, name, event, result): the loss returned, before its event is written",
    "softmax": "(m, name, tensor, dim, caller): F.softmax/log_softmax/softmin is called from frame `caller`",
    "softmax_output": "(m, name, result): it returned",
    "load": "(m, args, kwargs, event): torch.load is called; may add fields to its `load` event",
    "worker_start": "(m, loader_site, key, num_workers, worker_id): in a DataLoader worker, after worker_init_fn",
    "dump": "(m, event): the `counts` event is written (at steps and at exit); may add the state it has so far",
}


def _never() -> bool:
    return False


# torch.compile's warning that global module hooks (ours) fire once more for the OptimizedModule.
COMPILE_HOOKS_WARNING = "Using `torch.compile(module)` when there are global hooks on modules"


def _guarded(hook: Callable) -> Callable:
    """A monitor problem is reported as an event; it never breaks the user's program. Inside a
    region torch.compile traces, the hook does nothing: the compiled code runs unmonitored."""

    @functools.wraps(hook)
    def guarded(self: "Monitor", *args: Any, **kwargs: Any) -> None:
        if self.compiling():
            return
        try:
            hook(self, *args, **kwargs)
        except Exception as exc:
            self.internal_error(hook.__name__, exc)

    return guarded


class Monitor:
    """Installs the hooks, keeps the per-process state, writes events to a sink, and calls the
    checks' monitors (`HOOKS`). The state checks share: `steps`, `roots` (root modules seen),
    `pending_roots` (grad-enabled root forwards since the last backward, dicts a check may
    annotate), `backward_since_step`, `last_grad_event`, `loss_sites` and `notes`."""

    tensors = staticmethod(_support.tensors)
    describe = staticmethod(_support.describe)
    rounded, owner = staticmethod(_support.rounded), staticmethod(_support.owner)
    error_summary = staticmethod(_support.error_summary)
    gradient_norms = _support.gradient_norms  # a method: (self, optimizer)

    def __init__(self, sink: Any, max_steps: int = 0) -> None:
        self.sink = sink
        self.max_steps = max_steps
        self.user = _support.UserCode()
        self.counts: dict[str, int] = {}
        self.steps = 0
        self.local = threading.local()
        self.notes: dict[str, Any] = {}  # facts one check's monitor leaves for another's
        self.pending_roots: list[dict] = []
        self.roots: Any = None  # WeakSet of root modules seen
        self.checked_modules: Any = None
        self.loader_sites: Any = None  # DataLoader -> where the program constructed it
        self.loss_sites: Any = None  # loss / softmax module -> where the program constructed it
        self.optimizers: Any = None
        self.zeroed_since_step = False
        self.backward_since_step = False
        self.last_grad_event: Optional[tuple] = None  # ("backward" | "zero_grad", site)
        self._loader_iterations = 0
        self._undo: list[Callable[[], None]] = []
        self._torch_hook: Any = None
        self.installed = False
        self.watching = True  # the per-step hooks are in (wrappers held by the program check this)
        self._watch_handles: list[Any] = []
        self._next_dump = 0.0  # monotonic time after which an unwatched step may dump again
        self._registries: Any = None  # (torch's module hooks module, optimizer module) once torch is in
        self.script: Optional[str] = None
        # torch.compiler.is_compiling once torch is in: dynamo traces it as True, so every hook and
        # wrapper steps aside in the regions it compiles (fullgraph=True cannot trace our frames).
        self.compiling: Callable[[], bool] = _never
        self.crashed: Optional[BaseException] = None  # the exception recorded as this process's crash
        self.excepthook: Optional[Callable] = None  # ours, once installed (start_from_environment)
        self.plugins = [cls() for _, cls in MONITORS] + [_recorder.SeriesRecorder()]  # the --report series
        self._hooks = {name: [getattr(p, name) for p in self.plugins if hasattr(p, name)] for name in HOOKS}

    # -- events -------------------------------------------------------------------------

    def record(self, kind: str, site: Optional[list], **data: Any) -> None:
        always = data.pop("always", False)  # rare, decisive events are never capped
        key = f"{kind}@{site[0]}:{site[1]}" if site else kind
        n = self.counts.get(key, 0) + 1
        self.counts[key] = n
        if n <= EVENT_CAP or always:
            self.sink.write({"kind": kind, "site": site, "pid": os.getpid(), "rank": self.rank(),
                             "world": self.world(), "step": self.steps, **data})

    def internal_error(self, where: str, exc: BaseException) -> None:
        self.sink.write({"kind": "internal_error", "pid": os.getpid(), "where": where, "error": repr(exc)[:300]})

    def call(self, hook: str, *args: Any) -> None:
        """Every check's `hook`; one that fails is reported and skipped."""
        for fn in self._hooks[hook]:
            try:
                fn(self, *args)
            except Exception as exc:
                self.internal_error(f"{type(fn.__self__).__name__}.{hook}", exc)

    def dump(self) -> None:
        """Counters and the user files loaded so far (rewritten at each step and at exit)."""
        event = {"kind": "counts", "pid": os.getpid(), "rank": self.rank(), "counts": dict(self.counts),
                 "steps": self.steps, "files": self.user.files(), "main": self._main_file()}
        self.call("dump", event)
        self.sink.write(event)

    def _main_file(self) -> Optional[str]:
        # Python deletes __main__.__file__ when the script ends, before atexit: fall back to argv.
        path = getattr(sys.modules.get("__main__"), "__file__", None) or self.script
        return self.user.realpath(path) if isinstance(path, str) and self.user.is_user(path) else None

    def dist(self) -> Any:
        torch = sys.modules.get("torch")
        if torch is None:
            return None
        dist = getattr(torch, "distributed", None)
        if dist is not None and dist.is_available() and dist.is_initialized():
            return dist
        return None

    def rank(self) -> int:
        dist = self.dist()
        return dist.get_rank() if dist is not None else _support.env_rank()

    def world(self) -> int:
        dist = self.dist()
        return dist.get_world_size() if dist is not None else 1

    def parameter_names(self) -> dict[int, str]:
        names: dict[int, str] = {}
        for root in list(self.roots or ()):
            for name, param in root.named_parameters():
                names.setdefault(id(param), name)
        return names

    # -- installation -------------------------------------------------------------------

    def install(self) -> None:
        if self.installed:
            return
        self.installed = True
        argv0 = sys.argv[0] if getattr(sys, "argv", None) else ""
        self.script = os.path.abspath(argv0) if argv0.endswith(".py") and os.path.isfile(argv0) else None
        self.sink.write({"kind": "process", "pid": os.getpid(), "ppid": os.getppid(), "argv": list(sys.argv),
                         "rank": _support.env_rank()})
        _crash_hooks.patch_process_bootstrap(self)
        if "torch" in sys.modules and hasattr(sys.modules["torch"], "nn"):
            self.install_torch()
        else:
            self._torch_hook = _support.TorchImportHook(self)
            sys.meta_path.insert(0, self._torch_hook)

    def uninstall(self) -> None:
        if self._torch_hook in sys.meta_path:
            sys.meta_path.remove(self._torch_hook)
        for undo in reversed(self._undo):
            undo()
        self._undo.clear()
        self.installed = False

    def patch(self, owner: Any, name: str, replacement: Any) -> None:
        """Replace `owner.name` until uninstall()."""
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
        self.compiling = getattr(getattr(torch, "compiler", None), "is_compiling", _never)
        own_files = {__file__, _wrappers.__file__, _support.__file__,
                     *(sys.modules[cls.__module__].__file__ for _, cls in MONITORS)}
        self.patch(warnings, "warn", _support.transparent_warn(warnings.warn, own_files, self._caused_by_us,
                                                                     self.compiling))
        self.roots = weakref.WeakSet()
        self.checked_modules = weakref.WeakSet()
        self.loader_sites = weakref.WeakKeyDictionary()
        self.loss_sites = weakref.WeakKeyDictionary()
        self.optimizers = weakref.WeakSet()

        for owner, name in ((torch.Tensor, "backward"), (torch.autograd, "backward"), (torch.autograd, "grad")):
            self.patch(owner, name, self._wrap_backward(getattr(owner, name)))
        for name in _wrappers.MONITORED_LOSSES:
            self.patch(F, name, _wrappers.wrap_loss(self, name, getattr(F, name)))
        for name in _wrappers.SOFTMAXES:
            self.patch(F, name, _wrappers.wrap_softmax(self, name, getattr(F, name)))
        if hasattr(torch, "compile"):
            self.patch(torch, "compile", _wrappers.wrap_compile(self, torch.compile))
        load = _wrappers.wrap_load(self, torch.serialization.load)
        self.patch(torch, "load", load)
        self.patch(torch.serialization, "load", load)
        self.patch(torch.optim.Optimizer, "zero_grad", _wrappers.wrap_zero_grad(self, torch.optim.Optimizer.zero_grad))
        self.patch(torch.nn.Module, "zero_grad", _wrappers.wrap_zero_grad(self, torch.nn.Module.zero_grad))

        self._registries = (module_mod, optim_mod)
        self._undo.append(optim_mod.register_optimizer_step_post_hook(self._step_post_hook).remove)
        self.watch(True)
        self._undo.append(lambda: self.watch(False))
        self.patch(torch.nn.Module, "train", _wrappers.wrap_train(self, torch.nn.Module.train))

        # Where the program built each DataLoader, loss and softmax module: static findings sit there.
        self.patch(dataloader_mod.DataLoader, "__init__",
                   _wrappers.wrap_construction(self, dataloader_mod.DataLoader.__init__, self.loader_sites))
        for cls in (torch.nn.modules.loss._Loss, torch.nn.Softmax, torch.nn.Softmin, torch.nn.LogSoftmax):
            self.patch(cls, "__init__", _wrappers.wrap_construction(self, cls.__init__, self.loss_sites))
        self._patch_worker_start(dataloader_mod)
        self.call("install", torch)

    def watch(self, on: bool) -> None:
        """Put the per-step hooks in (global module forward hooks, the optimizer step pre-hook)
        or take them out, as support.watched_step says. Out, torch calls modules on its fast
        path and the wrappers the program holds return at once; the step post-hook stays, so
        steps are still counted."""
        if on == self.watching and (bool(self._watch_handles) == on or self._registries is None):
            return
        self.watching = on
        for handle in self._watch_handles:
            handle.remove()
        self._watch_handles = []
        if on and self._registries is not None:
            module_mod, optim_mod = self._registries
            self.local.depth = 0  # between steps: no forward of ours is open
            self._watch_handles = [module_mod.register_module_forward_pre_hook(self._forward_pre_hook),
                                   module_mod.register_module_forward_hook(self._forward_hook, always_call=True),
                                   optim_mod.register_optimizer_step_pre_hook(self._step_pre_hook)]

    def exclude_compiler_caches(self) -> None:
        """The Python files inductor writes and imports (its cache directory) are not the user's."""
        try:
            from torch._inductor.runtime.cache_dir_utils import default_cache_dir

            self.user.add_excluded(os.environ.get("TORCHINDUCTOR_CACHE_DIR") or default_cache_dir())
        except Exception as exc:  # another torch layout: at worst its files are linted too
            self.internal_error("compile", exc)

    @staticmethod
    def _caused_by_us(message: Any) -> bool:
        """A warning only our hooks cause: torch.compile's about global module hooks, when the
        program has none of its own (ours are one forward pre-hook and one forward hook)."""
        if not str(message).startswith(COMPILE_HOOKS_WARNING):
            return False
        from torch.nn.modules import module as module_mod

        return (len(module_mod._global_forward_pre_hooks) <= 1 and len(module_mod._global_forward_hooks) <= 1
                and not module_mod._global_backward_pre_hooks and not module_mod._global_backward_hooks
                and not module_mod._global_forward_hooks_with_kwargs)

    def _patch_worker_start(self, dataloader_mod: Any) -> None:
        monitor = self
        iter_init = dataloader_mod._MultiProcessingDataLoaderIter.__init__

        @functools.wraps(iter_init)
        def multi_init(iterator: Any, loader: Any) -> None:
            original = loader.worker_init_fn
            monitor._loader_iterations += 1
            key = f"{os.getpid()}:{monitor._loader_iterations}"
            loader.worker_init_fn = _support.WorkerProbe(original, monitor.loader_sites.get(loader), key, loader.num_workers)
            try:
                iter_init(iterator, loader)
            finally:
                loader.worker_init_fn = original

        self.patch(dataloader_mod._MultiProcessingDataLoaderIter, "__init__", multi_init)

    # -- autograd -----------------------------------------------------------------------

    def _wrap_backward(self, original: Callable) -> Callable:
        monitor = self
        fn = original.__name__

        @functools.wraps(original)
        def backward(*args: Any, **kwargs: Any) -> Any:
            if not monitor.watching or monitor.compiling() or getattr(monitor.local, "in_backward", False):
                return original(*args, **kwargs)
            import torch

            target = args[0] if args else (kwargs.get("tensors") or kwargs.get("outputs") or kwargs.get("self"))
            if isinstance(target, (list, tuple)) and target:
                target = target[0]
            site = monitor.user.site(2)
            event: dict[str, Any] = {"fn": fn, "grad_enabled": torch.is_grad_enabled()}
            tensor = target if isinstance(target, torch.Tensor) else None
            if tensor is not None:
                event.update(requires_grad=tensor.requires_grad, has_grad_fn=tensor.grad_fn is not None)
            monitor.call("before_backward", tensor, site, fn)
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
                monitor.call("after_backward", site, fn, fn != "grad" and kwargs.get("inputs") is None)
                if fn != "grad":
                    monitor.backward_since_step = True
                    monitor.last_grad_event = ("backward", site)
                monitor.pending_roots.clear()

        return backward

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
        # tensors there, so read them from Module._call_impl's frame.
        caller = sys._getframe(2)  # Module._call_impl, or its `inner` closure
        kwargs = caller.f_locals.get("kwargs") if caller.f_code.co_name in ("_call_impl", "inner") else None
        if kwargs and isinstance(kwargs, dict):
            args = (*args, *kwargs.values())
        module = _compiled_original(module)

        self.roots.add(module)
        site = self.user.site(2)
        if torch.is_grad_enabled():
            self.pending_roots.append({"ref": weakref.ref(module), "site": site})
            if len(self.pending_roots) > 64:  # forwards never backpropagated (an eval loop without no_grad)
                del self.pending_roots[:-64]
        if module not in self.checked_modules:
            self.checked_modules.add(module)
            self.call("first_forward", module, args, site)
        self.call("root_forward", module, args, site)

    @_guarded
    def _forward_hook(self, module: Any, args: Any, output: Any) -> None:
        self.local.depth = max(0, self._depth() - 1)
        self.call("forward", _compiled_original(module), args, output, not self.local.depth)

    # -- optimizers ---------------------------------------------------------------------

    @_guarded
    def _step_pre_hook(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        site = self.user.site(2)
        self.optimizers.add(optimizer)
        every = [p for group in optimizer.param_groups for p in group["params"]]
        event = {"optimizer": type(optimizer).__name__, "total": sum(1 for p in every if p.requires_grad),
                 "count": len(every)}
        self.call("step", optimizer, site, event)
        self.record("step", site, **event)

    def _step_post_hook(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if self.compiling():
            return
        self.steps += 1
        self.zeroed_since_step = self.backward_since_step = False
        # atexit writes the last; these guard against a kill. Past the watched steps the counts
        # hardly change, so at most one a second (a write costs more than a tiny step).
        later = self.steps > _support.FULL_STEPS
        if self.steps <= 10 or self.steps % 10 == 0 and (not later or time.monotonic() >= self._next_dump):
            self._next_dump = time.monotonic() + 1.0
            self.dump()
        self.watch(_support.watched_step(self.steps + 1))
        if self.max_steps and self.steps >= self.max_steps and not getattr(self.local, "stopping", False):
            self.local.stopping = True
            self.sink.write({"kind": "budget", "pid": os.getpid(), "rank": self.rank(), "steps": self.steps})
            raise SystemExit(0)

    # -- crashes ------------------------------------------------------------------------

    def record_crash(self, kind: type, value: BaseException, tb: Any) -> None:
        if value is self.crashed:  # seen by our excepthook already
            return
        self.crashed = value
        site, data = _support.crash_fields(self.user, kind, value, tb)
        self.record("crash", site, always=True, **data)
        self.dump()

    def at_exit(self) -> None:
        """The last counters; and the crash, if the program's own excepthook (rich, loguru)
        replaced ours: Python sets sys.last_value before it calls whichever hook is there."""
        value = getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)
        replaced = self.excepthook is not None and sys.excepthook is not self.excepthook  # else ours saw it all
        if replaced and isinstance(value, Exception) and value.__traceback__ is not None and self.crashed is None:
            try:
                self.record_crash(type(value), value, value.__traceback__)
            except Exception as exc:
                self.internal_error("at_exit", exc)
        self.dump()


def _compiled_original(module: Any) -> Any:
    """The module torch.compile(module) wraps: the checks judge it, not the OptimizedModule, whose
    forward hooks run around the compiled region (the original's run inside it, unmonitored)."""
    original = getattr(module, "_orig_mod", None)
    return original if original is not None and type(module).__name__ == "OptimizedModule" else module


# api.py and the benchmarks use these from here.
FileSink, ListSink, current, set_current = _support.FileSink, _support.ListSink, _support.current, _support.set_current


def start_from_environment() -> Optional[Monitor]:
    """Called by the sitecustomize `torchlint run` puts on PYTHONPATH."""
    directory = os.environ.get(ENV_DIR)
    if not directory or not os.path.isdir(directory):
        return None
    monitor = Monitor(_support.FileSink(directory), max_steps=int(os.environ.get(ENV_MAX_STEPS, "0") or 0))
    set_current(monitor)
    monitor.install()
    atexit.register(monitor.at_exit)
    sys.excepthook = monitor.excepthook = _crash_hooks.excepthook(monitor, sys.excepthook)
    _crash_hooks.log_fatal_signals(directory)
    return monitor
