"""TL601: torch.load without weights_only=True."""

from __future__ import annotations

import ast
import os
import sys

from torchlint.analysis.torch_versions import at_least
from torchlint.checker import FileContext
from torchlint.edits import UNSAFE, add_keyword, make_fix
from torchlint.records import RuntimeResult
from torchlint.rules.base import Evidence, Rule, TORCH_VERSION_OPTION, Violation, has_star_kwargs, keyword, literal
import torchlint.runtime.judging as run

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional
    from pathlib import Path


def _catches_type_error(node: ast.AST) -> bool:
    if isinstance(node, ast.ExceptHandler) and node.type is not None:
        names = [node.type] if not isinstance(node.type, ast.Tuple) else node.type.elts
        return any(isinstance(n, ast.Name) and n.id == "TypeError" for n in names)
    return False


def _in_type_error_fallback(ctx: FileContext) -> bool:
    return ctx.any_ancestor("except-type-error", _catches_type_error)


def run_verdict(obs: run.Observation, path: str, rows: tuple[int, int], cwd: Path) -> RuntimeResult:
    """What the run shows: the `weights_only` the load used and whether the weights-only unpickler refused the file."""
    calls, hits = run.calls_at(obs, "load", path, rows)
    if not calls:
        return run.not_reached("no torch.load call ran at this line")
    for e in calls:
        if e.get("error") and "Unpickl" in e["error"]:
            detail = f" ({e['detail'][0].rstrip('.')})" if e.get("detail") else ""
            return run.verdict("confirmed", f"at step {e['step']}, torch.load raised {e['error'].rstrip('.')}{detail}: "
                                            "the file holds objects only full unpickling can build, so it loads "
                                            "only with weights_only=False, which runs code from the file", hits)
        if e.get("weights_only") is False:
            return run.verdict("confirmed", f"at step {e['step']}, torch.load ran with weights_only=False: any "
                                            "callable the file names was imported and called", hits)
    how = "with weights_only=True" if all(e.get("weights_only") for e in calls) else "without error"
    return run.verdict("not-observed", f"ran {hits} time(s), each {how}: the file held only tensors and plain "
                                       "containers", hits)


class LoadMonitor:
    """The weights_only each torch.load call uses (torch's own default rule); the generic
    wrapper adds the error it raised, if any."""

    def load(self, m: Any, args: tuple, kwargs: dict, event: dict) -> None:
        event["weights_only"] = self.weights_only(args, kwargs)

    @staticmethod
    def weights_only(args: tuple, kwargs: dict) -> Optional[bool]:
        """The weights_only torch.load will use, None if unknown."""
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


# -- evidence (runs only in the --verify worker: see CONTRIBUTING.md) ----------------------
class _Payload:
    def __reduce__(self) -> tuple:
        import os

        return (os.getpid, ())  # harmless callable; proves code runs during unpickling


def probe_unsafe_load(params: dict, device: str) -> tuple[str, str]:
    import io
    import os
    import pickle

    import torch
    from _evidence import first_line, raises

    buf = io.BytesIO()
    torch.save({"weights": torch.ones(1), "payload": _Payload()}, buf, pickle_protocol=pickle.HIGHEST_PROTOCOL)
    buf.seek(0)
    loaded = torch.load(buf, weights_only=False)  # noqa: TL601 - the hazard, on purpose
    ran = loaded["payload"] == os.getpid()
    buf.seek(0)
    default = raises(lambda: torch.load(buf))  # noqa: TL601 - the hazard, on purpose
    if params.get("explicit_false", True):
        if ran:
            return ("confirmed", "torch.load(weights_only=False) called a pickled callable (os.getpid) while loading"
                    + (f"; the default load refuses it: {first_line(default)}" if default else ""))
        return "not-reproduced", "torch.load(weights_only=False) did not run the pickled callable"
    if default is None:
        return "confirmed", "the default torch.load (weights_only unset) ran a pickled callable while loading"
    # The finding is about the torch floor the code supports (before 2.6), not this torch: a
    # refusal here says nothing of the old default, so nothing is shown (issue 19).
    return ("skipped", f"the hazard is the default of torch before 2.6; torch {torch.__version__} here defaults to "
                       f"weights_only=True and refused the pickled callable ({first_line(default)}), so it cannot "
                       "show it")


def observe_saved_checkpoint(build, facts: dict) -> tuple[str, str]:
    """The --verify observer for the project's own checkpoints: `build()` makes an object of
    the shape the project's `torch.save` stores for this file (verify/checkpoints.py); it is
    saved and loaded as the flagged call loads it, and with weights_only=True. Copied for the
    worker like a probe: torch only."""
    import io

    import torch

    kinds = {"state_dict": "tensors and plain values only", "namespace": "a dict holding an argparse.Namespace",
             "module": "a whole nn.Module"}
    what = f"a checkpoint like the one {facts.get('saved_at')} saves ({kinds.get(str(facts.get('saved')), '?')})"

    def load(weights_only: "bool | None") -> str:
        buf = io.BytesIO()
        torch.save(build(), buf)
        buf.seek(0)
        try:
            torch.load(buf) if weights_only is None else torch.load(buf, weights_only=weights_only)
        except Exception as exc:  # noqa: BLE001 - the refusal is the evidence
            return f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:160]}"
        return ""

    strict = load(weights_only=True)
    if facts.get("explicit_false"):
        if strict:
            return "confirmed", (f"weights_only=False unpickles anything; {what} is refused by weights_only=True "
                                 f"({strict}), so the load needs an allow-list (torch.serialization.add_safe_globals)")
        return "confirmed", f"weights_only=False unpickles anything, and {what} loads with weights_only=True too"
    default = load(None)
    if default:
        return "confirmed", (f"torch {torch.__version__} refuses {what} with its default weights_only=True "
                             f"({default}): it loads only with weights_only=False, the unsafe load")
    if strict:
        return "confirmed", (f"the default torch.load of torch {torch.__version__} unpickles {what}, which "
                             f"weights_only=True refuses ({strict})")
    return "skipped", (f"torch {torch.__version__} loads {what} with weights_only=True, its default; the hazard "
                       "is the default of torch before 2.6, which this torch cannot show")


class WeightsOnlyFalse(Violation):
    help = "Load only trusted files, or save a `state_dict()` and use `weights_only=True`"

    def message(self) -> str:
        return "`torch.load(weights_only=False)` runs code from a malicious checkpoint"


class LoadWithoutWeightsOnly(Violation):
    help = "Pass `weights_only=True` and load a `state_dict()`"

    def message(self) -> str:
        return "`torch.load` without `weights_only=` unpickles arbitrary code before torch 2.6"


class UnsafeTorchLoad(Rule):
    """On the 2026-12 held-out corpus (54 projects, independent triage), 9 of 20 findings were true;
    off by default. Enable it with `--extend-select TL601`.

    ## What it does
    Flags `torch.load(...)` with `weights_only=False` (severity error) or without `weights_only`
    (severity warning). A call that passes `**kwargs` may carry `weights_only` and is not flagged;
    neither is a call inside an `except TypeError:` fallback written for old torch versions.

    The unset form (no `weights_only=`) is a hazard only before torch 2.6, where `weights_only`
    defaulted to `False`. It reads the torch floor from `torch-version` / `--torch-version`, and
    when both are unset, from the project's own requirement: `pyproject.toml`
    (`[project] dependencies = ["torch>=2.7"]`), else `setup.cfg` (`[options] install_requires`),
    else a `requirements*.txt` at the project root. With a floor of 2.6 or newer only an explicit
    `weights_only=False` is reported.

    ## Why is this bad?
    `torch.load` with `weights_only=False` unpickles arbitrary Python objects: a malicious
    checkpoint (a downloaded model, a shared file) executes code on load. Before torch 2.6 that
    was the default. Since torch 2.6 the default is `weights_only=True`, and checkpoints that
    pickled whole objects fail with `UnpicklingError: Weights only load failed`, so code without
    an explicit argument is unsafe on old versions and broken on new ones.

    ## Example
    ```python
    model = torch.load("model.pt")
    ```

    ## Use instead
    ```python
    model.load_state_dict(torch.load("model.pt", weights_only=True))
    ```

    ## Fix safety
    Unsafe (applied with `--unsafe-fixes`): adding `weights_only=True` makes loading a
    checkpoint that pickles whole objects (a saved `nn.Module`, custom classes) fail with an
    `UnpicklingError` instead of running its code. An explicit `weights_only=False` is never
    rewritten.

    ## References
    - [torch.load](https://pytorch.org/docs/stable/generated/torch.load.html)
    - [Serialization semantics: weights_only](https://pytorch.org/docs/stable/notes/serialization.html#weights-only)
    """

    code = "TL601"
    name = "unsafe-torch-load"
    summary = "torch.load with weights_only=False (or unset) can execute arbitrary code"
    peer_checks = {"TOR102": "covered (TL601 also knows the torch ≥ 2.6 default)"}  # rules_docs/peer-parity.md
    severity = "warning"
    default_enabled = False
    tags = ("security", "serialization")
    requires_text = ('load',)
    security_severity = 8.8
    options = {"torch-version": TORCH_VERSION_OPTION}
    evidence = Evidence(probe=probe_unsafe_load, runtime=run_verdict, monitor=LoadMonitor,
                        crash=r"UnpicklingError|Weights only load failed|WeightsUnpickler",
                        observe=observe_saved_checkpoint)

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        if ctx.call_name(node) != "torch.load" or has_star_kwargs(node):
            return
        kw = keyword(node, "weights_only")
        if kw is not None:
            value = literal(kw.value)
            if value is False:
                self.report(node, WeightsOnlyFalse(), severity="error", params={"explicit_false": True})
            return
        if _in_type_error_fallback(ctx):
            return  # the fallback for torch versions without weights_only
        if at_least(self.settings["torch-version"], "2.6"):
            return  # weights_only defaults to True from torch 2.6: the hazard cannot occur
        self.report(node, LoadWithoutWeightsOnly(), params={"explicit_false": False},
                    fix=_fix(node, ctx))


def _fix(node: ast.Call, ctx: FileContext):  # type: ignore[no-untyped-def]
    add = add_keyword(ctx.source, node, "weights_only=True")
    # Unsafe: a checkpoint holding whole objects (not tensors and containers) stops loading.
    return make_fix("Pass `weights_only=True`", [add], UNSAFE) if add is not None else None
