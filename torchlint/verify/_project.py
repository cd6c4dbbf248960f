"""Worker side of the project import (stdlib only; the worker cannot import torchlint): in a
file's own sandboxed process, import the module that holds the finding the way the user's
program would (its package, `sys.path` from the project root, `__name__` the module's name,
so `if __name__ == "__main__":` blocks do not run), build the user's class, and hand a
builder to the rule's observer, which looks at the real object.

Whatever the user's code raises, `SystemExit` included, is this finding's `error`."""

from __future__ import annotations

import importlib
import importlib.util
import io
import os
import sys
from typing import Any, Callable

Observer = Callable[[Callable[[], Any], dict], "tuple[str, str]"]


class ImportFailed(Exception):
    """The user's module or class could not be loaded; the message says how."""


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:200]}" if text else type(exc).__name__


def _import(spec: dict, root: str) -> Any:
    """The module by its dotted name; a file whose name is no identifier (`4.1_model.py`, a
    script) is loaded from its path, under a name that is not `__main__` either."""
    name = spec["module"]
    if all(part.isidentifier() for part in name.split(".")):
        return importlib.import_module(name)
    found = importlib.util.spec_from_file_location("torchlint_checked_module", os.path.join(root, spec["file"]))
    if found is None or found.loader is None:
        raise ImportError(f"no loader for {spec['file']}")
    module = importlib.util.module_from_spec(found)
    sys.modules[found.name] = module
    found.loader.exec_module(module)
    return module


def load(spec: dict, root: str) -> Any:
    """The user's class, from its module imported out of the snapshot at `root`."""
    for entry in reversed(spec["path"]):
        path = os.path.join(root, entry) if entry else root
        if path not in sys.path:
            sys.path.insert(0, path)
    sys.dont_write_bytecode = True  # the snapshot is read-only anyway
    stdin, argv = sys.stdin, sys.argv
    # The module's top level runs as under `python train.py` with no arguments, reading no
    # requests meant for this process.
    sys.stdin, sys.argv = io.StringIO(""), [os.path.join(root, *spec["module"].split(".")) + ".py"]
    try:
        module = _import(spec, root)
    except BaseException as exc:  # noqa: BLE001 - SystemExit from argparse, the user's own errors
        raise ImportFailed(f"importing `{spec['module']}` failed: {_first_line(exc)}") from None
    finally:
        sys.stdin, sys.argv = stdin, argv
    cls = getattr(module, spec["class"], None)
    if cls is None:
        raise ImportFailed(f"`{spec['module']}` has no `{spec['class']}` once imported")
    return cls


# Display-only libraries a tutorial script imports at its top (`import matplotlib.pyplot as
# plt`) and uses after training. Where one is not installed here, the import gets a stand-in,
# so the program reaches a flagged line before its plots; a run that *used* the stand-in
# before it stopped is thrown away (its values could come from it).
DISPLAY_ONLY = frozenset({"matplotlib", "seaborn", "IPython"})
# Calls that only configure the display (`matplotlib.use("Agg")`, `sns.set()`): not a use.
_SETTINGS = frozenset({"use", "ion", "ioff", "switch_backend", "set", "set_style", "set_theme"})


class _StandIn:
    used: list[str] = []

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, name: str) -> "_StandIn":
        if name.startswith("__"):
            raise AttributeError(name)
        return _StandIn(f"{self._name}.{name}")

    def __call__(self, *args: Any, **kwargs: Any) -> "_StandIn":
        if self._name.rsplit(".", 1)[-1] not in _SETTINGS:
            _StandIn.used.append(self._name)
        return self


class _StandInFinder:
    """Last on sys.meta_path: consulted only when the real library is not installed."""

    created: set[str] = set()

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name.split(".")[0] not in DISPLAY_ONLY:
            return None
        return importlib.util.spec_from_loader(name, self, is_package=True)  # type: ignore[arg-type]

    def create_module(self, spec: Any) -> Any:
        module = type(sys)(spec.name)
        _StandInFinder.created.add(spec.name)
        module.__path__ = []  # type: ignore[attr-defined]  # a package: its submodules resolve here too
        module.__getattr__ = _StandIn(spec.name).__getattr__  # type: ignore[attr-defined,method-assign]
        return module

    def exec_module(self, module: Any) -> None:
        pass


def run_program(spec: dict, root: str, seconds: float) -> list[dict]:
    """The file run once as its program (verify/program.py) from the snapshot at `root`,
    every member's flagged line instrumented: per member, {"verdict", "evidence"} of its
    judge or {"why"} it did not get there. `python file.py` with no arguments and an empty
    stdin, from the file's own directory."""
    if not any(isinstance(f, _StandInFinder) for f in sys.meta_path):
        sys.meta_path.append(_StandInFinder())
    _StandIn.used.clear()
    import slices

    runs = _run_program(spec, root, lambda file: slices.run_batch(spec["members"], spec["source"], file, seconds,
                                                                  lambda: list(_StandIn.used)))
    missing = sorted({n.split(".")[0] for n in _StandInFinder.created})
    out: list[dict] = []
    for result, why, used in runs:
        stand_ins = sorted({n.split(".")[0] for n in used})
        if result is None:
            out.append({"why": why})
        elif stand_ins:
            out.append({"why": f"the program called {', '.join(stand_ins)} (not installed here, so a stand-in) "
                               "before the flagged line"})
        else:
            note = (f" ({', '.join(missing)} not installed here: imported as a stand-in, never called before the "
                    "flagged line)") if missing else ""
            out.append({"verdict": result[0], "evidence": f"ran {spec['file']} as its program: {result[1]}{note}"})
    return out


def run_variants(code: str, spec: dict, root: str, facts: dict, seconds: float) -> tuple[Any, str]:
    """A rule that compares two runs of the program (the `.data` write as written and
    tracked): its own runs, (the judge's (verdict, evidence), "") or (None, why not)."""
    import slices

    if not any(isinstance(f, _StandInFinder) for f in sys.meta_path):
        sys.meta_path.append(_StandInFinder())
    _StandIn.used.clear()
    result, why = _run_program(spec, root, lambda file: slices.run_slice(
        code, facts, spec["variants"], spec.get("stop", "flag"), bool(spec.get("grads")), seconds, program=file))
    stand_ins = sorted({n.split(".")[0] for n in _StandIn.used})
    if result is not None and stand_ins:
        return None, (f"the program called {', '.join(stand_ins)} (not installed here, so a stand-in) before the "
                      "flagged line")
    missing = sorted({n.split(".")[0] for n in _StandInFinder.created})
    if result is not None and missing:
        result = (result[0], f"{result[1]} ({', '.join(missing)} not installed here: imported as a stand-in, "
                             "never called before the flagged line)")
    return result, why


def _run_program(spec: dict, root: str, run: Callable[[str], Any]) -> Any:
    for entry in reversed(spec["path"]):
        path = os.path.join(root, entry) if entry else root
        if path not in sys.path:
            sys.path.insert(0, path)
    sys.dont_write_bytecode = True
    file = os.path.join(root, spec["file"])
    stdin, argv, cwd = sys.stdin, sys.argv, os.getcwd()
    sys.stdin, sys.argv = io.StringIO(""), [file]
    try:
        # A notebook's folder may hold no .py file, so the snapshot lacks it: run from the root.
        here = os.path.dirname(file)
        os.chdir(here if here and os.path.isdir(here) else root)
        return run(file)
    finally:
        sys.stdin, sys.argv = stdin, argv
        os.chdir(cwd)


def observe(code: str, spec: dict, root: str, facts: dict, observers: dict) -> tuple[str, str]:
    """(verdict, evidence) of the rule's observer on the user's object."""
    try:
        cls = load(spec, root)
    except ImportFailed as exc:
        return "error", str(exc)
    args, kwargs = spec.get("args") or [], spec.get("kwargs") or {}
    shown = f"{spec['module']}.{spec['class']}(" + ", ".join(
        [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]) + ")"

    def build() -> Any:
        return cls(*args, **kwargs)

    try:
        verdict, evidence = observers[code](build, dict(facts, attribute=spec.get("attribute") or "", built=shown))
    except BaseException as exc:  # noqa: BLE001 - the user's constructor failed: this finding's error
        return "error", f"building `{shown}` raised {_first_line(exc)}"
    return verdict, f"imported {spec['module']}: {evidence}"


def shaped(shape: str) -> Any:
    """A checkpoint of one of verify/checkpoints.py's shapes, as a training script saves it."""
    import argparse

    import torch

    weights = {"weight": torch.ones(2, 2), "bias": torch.zeros(2)}
    if shape == "module":
        return torch.nn.Linear(2, 2)
    if shape == "namespace":
        return {"model": weights, "epoch": 3, "args": argparse.Namespace(lr=0.1, batch_size=32)}
    return {"model": weights, "epoch": 3, "args": {"lr": 0.1}}


def observe_shape(code: str, spec: dict, facts: dict, observers: dict) -> tuple[str, str]:
    if code not in observers:
        return "skipped", "this rule has no observer for checkpoints"
    return observers[code](lambda: shaped(spec["shape"]), dict(facts, saved=spec["shape"], saved_at=spec["saved_at"]))
