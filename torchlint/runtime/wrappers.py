"""The wrappers of the torch functions the monitors watch (losses, softmax, torch.load,
zero_grad, constructors): each records what it saw, calls the checks' hooks and returns what
the function returned. Loaded by path beside monitor.py (see its `_sibling`); stdlib only at
import time."""

from __future__ import annotations

import functools
import inspect
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

# Calls per loss site whose labels are range-checked (each check reads two scalars).
LABEL_CHECK_LIMIT = 50
CLASS_INDEX_LOSSES = ("cross_entropy", "nll_loss")
MONITORED_LOSSES = CLASS_INDEX_LOSSES + ("binary_cross_entropy", "binary_cross_entropy_with_logits", "mse_loss",
                                         "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div", "poisson_nll_loss",
                                         "gaussian_nll_loss")
SOFTMAXES = ("softmax", "log_softmax", "softmin")


def wrap_zero_grad(monitor: Any, original: Callable) -> Callable:
    @functools.wraps(original)
    def zero_grad(owner: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(owner, *args, **kwargs)
        if not monitor.watching or monitor.compiling():
            return result
        site = monitor.user.site(2)
        monitor.call("zero_grad", owner, site)
        monitor.zeroed_since_step = True
        monitor.last_grad_event = ("zero_grad", site)
        monitor.record("zero_grad", site, after_backward=monitor.backward_since_step)
        return result

    return zero_grad


def wrap_train(monitor: Any, original: Callable) -> Callable:
    """Module.train, watching again when a module changes mode between sampled steps
    (support.watched_step): an evaluation pass (model.eval() ... model.train()) is seen whole."""
    @functools.wraps(original)
    def train(module: Any, mode: bool = True) -> Any:
        if not monitor.watching and getattr(module, "training", mode) != bool(mode):
            monitor.watch(True)
        return original(module, mode)

    return train


def wrap_construction(monitor: Any, original: Callable, sites: Any) -> Callable:
    @functools.wraps(original)
    def init(instance: Any, *args: Any, **kwargs: Any) -> None:
        original(instance, *args, **kwargs)
        if monitor.compiling():
            return
        site = monitor.user.site(2)
        if site is not None:
            sites[instance] = site

    return init


def wrap_softmax(monitor: Any, name: str, original: Callable) -> Callable:
    @functools.wraps(original)
    def softmax(*args: Any, **kwargs: Any) -> Any:
        if not monitor.watching or monitor.compiling():
            return original(*args, **kwargs)
        dim = args[1] if len(args) > 1 else kwargs.get("dim")
        tensor = args[0] if args else kwargs.get("input")
        monitor.call("softmax", name, tensor, dim, sys._getframe(1))
        if dim is None and tensor is not None and hasattr(tensor, "dim"):
            # torch's "implicit dimension" warning must still point at the caller, one frame up.
            if len(args) > 2:
                args = (*args[:2], args[2] + 1, *args[3:])
            else:
                kwargs["_stacklevel"] = kwargs.get("_stacklevel", 3) + 1
        result = original(*args, **kwargs)
        monitor.call("softmax_output", name, result)
        return result

    return softmax


def wrap_loss(monitor: Any, name: str, original: Callable) -> Callable:
    signature = inspect.signature(original)

    @functools.wraps(original)
    def loss(*args: Any, **kwargs: Any) -> Any:
        if not monitor.watching or monitor.compiling() or getattr(monitor.local, "in_loss", False):
            return original(*args, **kwargs)
        try:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            event = loss_event(monitor, name, bound.arguments, sys._getframe(1))
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
            monitor.call("after_loss", name, event, result)
            monitor.record("loss", event.pop("site"), **event)
        except Exception as exc:
            monitor.sink.write({"kind": "internal_error", "pid": os.getpid(), "where": name, "error": repr(exc)})
        return result

    return loss


def loss_event(monitor: Any, name: str, arguments: dict[str, Any], caller: Any) -> dict[str, Any]:
    """What the loss was called with: where, how it reduces, the input and target, and for
    class-index losses the classes; then what the checks' monitors add (`loss` hook)."""
    import torch

    inp, target = arguments.get("input"), arguments.get("target")
    owner = caller.f_locals.get("self") if caller is not None else None
    module_site = monitor.loss_sites.get(owner) if isinstance(owner, torch.nn.Module) else None
    reduction = arguments.get("reduction", "mean")
    if arguments.get("size_average") is not None or arguments.get("reduce") is not None:
        from torch.nn import _reduction

        reduction = _reduction.legacy_get_string(arguments.get("size_average"), arguments.get("reduce"),
                                                 emit_warning=False)  # the loss itself warns the user
    event: dict[str, Any] = {"fn": name, "site": monitor.user.site(3), "module_site": module_site,
                             "module": type(owner).__name__ if isinstance(owner, torch.nn.Module) else None,
                             "reduction": reduction, "grad_enabled": torch.is_grad_enabled()}
    if not isinstance(inp, torch.Tensor) or not isinstance(target, torch.Tensor):
        return event
    event.update(input=monitor.describe(inp), target=monitor.describe(target))
    if name in CLASS_INDEX_LOSSES:
        event.update(ignore_index=arguments.get("ignore_index", -100), class_index=target.dim() == inp.dim() - 1,
                     classes=inp.shape[1] if inp.dim() > 1 else inp.shape[0], input_dim=inp.dim(),
                     label_smoothing=arguments.get("label_smoothing", 0.0),
                     weighted=arguments.get("weight") is not None)
    # Reading labels costs a device sync: only the first LABEL_CHECK_LIMIT calls per site.
    key = f"labels@{event['site'][0]}:{event['site'][1]}" if event["site"] else "labels"
    budget = monitor.counts.get(key, 0) < LABEL_CHECK_LIMIT
    monitor.call("loss", name, inp, target, event, budget)
    if event.pop("labels_read", False):  # a check's monitor read labels: one of the budget spent
        monitor.counts[key] = monitor.counts.get(key, 0) + 1
    return event


def wrap_load(monitor: Any, original: Callable) -> Callable:
    @functools.wraps(original)
    def load(*args: Any, **kwargs: Any) -> Any:
        if monitor.compiling():
            return original(*args, **kwargs)
        site = monitor.user.site(2)
        event: dict[str, Any] = {}
        monitor.call("load", args, kwargs, event)
        try:
            return original(*args, **kwargs)
        except BaseException as exc:
            first, event["detail"] = monitor.error_summary(exc, 1)
            event["error"] = f"{type(exc).__name__}: {first}"
            raise
        finally:
            monitor.record("load", site, **event)

    return load


def wrap_compile(monitor: Any, original: Callable) -> Callable:
    """torch.compile, recorded where the program calls it: the regions it compiles run without
    the monitors (each hook steps aside while dynamo traces), and the report says so."""

    @functools.wraps(original)
    def compile(*args: Any, **kwargs: Any) -> Any:
        target = args[0] if args else kwargs.get("model")
        monitor.exclude_compiler_caches()
        monitor.record("compile", monitor.user.site(2), always=True, fullgraph=bool(kwargs.get("fullgraph")),
                       target=compiled_name(target),
                       backend=kwargs.get("backend") if isinstance(kwargs.get("backend"), str) else None)
        return original(*args, **kwargs)

    return compile


def compiled_name(target: Any) -> Any:
    """`Net` for a module, `train_step` for a function, `Net._call_impl` for `model.compile()`."""
    if target is None:
        return None
    owner = getattr(target, "__self__", None)
    if owner is not None and not isinstance(owner, type(sys)):
        return f"{type(owner).__name__}.{getattr(target, '__name__', '?')}"
    return getattr(target, "__qualname__", None) or type(target).__name__
