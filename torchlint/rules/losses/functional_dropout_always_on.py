"""TL402: F.dropout in a module's method without `training=`."""

from __future__ import annotations

import ast
import functools
import inspect
import sys

from torchlint.checker import FileContext
from torchlint.records import RuntimeResult
from torchlint.rules.base import Evidence, MODULE_BASES_OPTION, Rule, Violation, arg_or_keyword, has_star_kwargs, literal
import torchlint.runtime.judging as run

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any
    from pathlib import Path


# Only those whose `training` defaults to True: alpha_dropout and feature_alpha_dropout
# default to training=False (torch 2.13), so without the argument they are always off.
_DROPOUTS = frozenset(f"torch.nn.functional.{n}" for n in ("dropout", "dropout1d", "dropout2d", "dropout3d"))


def _tests_training(test: ast.AST) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr == "training" for n in ast.walk(test))


def _branch_on_training(node: ast.AST) -> bool:
    return isinstance(node, (ast.If, ast.IfExp)) and _tests_training(node.test)


def run_verdict(obs: run.Observation, path: str, rows: tuple[int, int], cwd: Path) -> RuntimeResult:
    """What the run shows: functional dropout active in eval mode."""
    calls, hits = run.calls_at(obs, "dropout", path, rows)
    if not calls:
        return run.not_reached("no functional dropout call ran at this line")
    for e in calls:
        if e["training_arg"] and not e["module_training"]:
            return run.verdict("confirmed", f"at step {e['step']}, {e['fn']}(p={e['p']}) was active while "
                                            f"{e['module']} was in eval mode (training=False)", hits)
    modes = "eval mode with training= passed" if any(not e["module_training"] for e in calls) else "train mode"
    return run.verdict("not-observed", f"ran {hits} time(s), always in {modes}", hits)


class FunctionalDropoutMonitor:
    """Each functional dropout call from a method of the program's own modules: `p`, the
    `training=` it got, and whether the module was in train mode."""

    DROPOUTS = ("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout")

    def install(self, m: Any, torch: Any) -> None:
        import torch.nn.functional as F

        for name in self.DROPOUTS:
            m.patch(F, name, self.wrap(m, name, getattr(F, name)))

    @staticmethod
    def wrap(m: Any, name: str, original: Any) -> Any:
        signature = inspect.signature(original)

        @functools.wraps(original)
        def dropout(*args: Any, **kwargs: Any) -> Any:
            owner = m.owner(sys._getframe(1))
            # nn.Dropout passes its own mode; only functional calls from the program's modules matter.
            if owner is not None and type(owner).__module__.split(".")[0] != "torch":
                try:
                    bound = signature.bind(*args, **kwargs)
                    bound.apply_defaults()
                    m.record("dropout", m.user.site(2), fn=name, p=bound.arguments.get("p"),
                             training_arg=bool(bound.arguments.get("training")),
                             module_training=owner.training, module=type(owner).__name__)
                except Exception as exc:
                    m.internal_error(name, exc)
            return original(*args, **kwargs)

        return dropout


# -- evidence (runs only in the --verify worker: see CONTRIBUTING.md) ----------------------
def probe_functional_dropout(params: dict, device: str) -> tuple[str, str]:
    import inspect

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    # An input shape each functional dropout accepts (dropout1d wants 2-D or 3-D, and so on).
    shapes = {"dropout": (1000,), "alpha_dropout": (1000,), "dropout1d": (10, 100, 1),
              "dropout2d": (10, 100, 1, 1), "dropout3d": (10, 100, 1, 1, 1), "feature_alpha_dropout": (10, 100, 1)}
    name = str(params.get("function", "dropout"))
    name = name if name in shapes else "dropout"
    fn = getattr(F, name)
    p = params.get("p", 0.5)
    p = min(max(float(p), 0.0), 1.0) if type(p) in (int, float) else 0.5
    shown = f"F.{name}(x, p={p:g})"

    class M(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return fn(x, p)

    m = M().eval()
    torch.manual_seed(0)
    x = torch.ones(shapes[name], device=device)
    out = m(x)
    changed = int((out != x).sum())
    if changed:
        zeroed = int((out == 0).sum())
        return "confirmed", (f"in eval() mode `{shown}` on {x.numel()} ones still zeroed {zeroed} and changed "
                             f"{changed} in all (the survivors are scaled by 1/(1-p))")
    default = inspect.signature(fn).parameters["training"].default
    why = f"F.{name} defaults to training={default}" if default is False else f"p={p:g} drops nothing"
    return "not-reproduced", f"in eval() mode `{shown}` left all {x.numel()} activations unchanged: {why}"


def observe_functional_dropout(build, facts: dict) -> tuple[str, str]:
    """The --verify observer on the user's own module (its file imported from the project,
    verify/project.py): in eval() mode, run forward twice on one input made from the first
    layer's declared shape; a dropout that is still on changes the output. Copied for the
    worker like a probe: torch only."""
    import torch
    from torch import nn

    built = facts.get("built") or "the module"
    model = build()
    first = next((m for m in model.modules() if isinstance(m, (nn.Linear, nn.Conv1d, nn.Conv2d))), None)
    if isinstance(first, nn.Linear):
        x = torch.ones(8, first.in_features)
    elif isinstance(first, nn.Conv2d):
        x = torch.ones(2, first.in_channels, 32, 32)
    elif isinstance(first, nn.Conv1d):
        x = torch.ones(2, first.in_channels, 64)
    else:
        return "skipped", f"no first nn.Linear or nn.Conv layer of `{built}` declares the input's shape for forward()"
    model.eval()
    outs = []
    try:
        for seed in (0, 1):
            torch.manual_seed(seed)
            with torch.no_grad():
                outs.append(model(x))
    except Exception as exc:  # noqa: BLE001 - the made-up input did not fit: say so, judge nothing
        return "skipped", (f"forward() of `{built}` on an input of shape {tuple(x.shape)} raised "
                           f"{type(exc).__qualname__}: {str(exc).strip().splitlines()[0][:120]}")
    a, b = outs
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
        return "skipped", f"forward() of `{built}` did not return a tensor"
    if not torch.equal(a, b):
        changed = float((a != b).float().mean())
        return "confirmed", (f"in eval() mode two forward passes of `{built}` on the same {tuple(x.shape)} input "
                             f"differ in {changed:.0%} of the outputs: the functional dropout is still on")
    return "not-reproduced", f"in eval() mode `{built}` gave the same output twice on one input: no dropout is on"


class DropoutWithoutTraining(Violation):
    function: str  # `dropout`, `dropout2d`, ...
    help = "Pass `training=self.training`, or use an `nn.Dropout` layer"

    def message(self) -> str:
        return f"`F.{self.function}` without `training=` stays on after `model.eval()`"


class FunctionalDropoutAlwaysOn(Rule):
    """On the 2026-12 held-out corpus (54 projects, independent triage), 0 of 1 findings were true;
    off by default. Enable it with `--extend-select TL402`.

    ## What it does
    Flags `F.dropout` and `F.dropout1d/2d/3d` inside an `nn.Module` method without a
    `training=` argument, unless it sits under a test of `self.training` (`if self.training:`),
    which already limits it to training mode. `F.alpha_dropout` and `F.feature_alpha_dropout`
    are not flagged: their `training` defaults to `False`, so without the argument they never
    drop anything (a different bug, but not this one).

    It stays silent when the probability is already zero outside training: `p=self.p if
    self.training else 0.0`, a local bound from such an expression, a call under
    `if self.training:`, or a parameter that every same-class caller passes gated
    (`self.attend(..., dropout_p=self.p if self.training else 0.0)`). Framework modules count
    as Modules (see {rule:unregistered-tensor-attribute}).

    ## Why is this bad?
    The functional form does not know about `model.eval()`: its `training` argument defaults to
    `True`, so dropout keeps zeroing activations during evaluation and inference. Metrics are
    noisy and lower than they should be, silently.

    ## Example
    ```python
    class Block(nn.Module):
        def forward(self, x):
            return F.dropout(self.fc(x), p=0.1)
    ```

    ## Use instead
    ```python
    class Block(nn.Module):
        def forward(self, x):
            return F.dropout(self.fc(x), p=0.1, training=self.training)
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [torch.nn.functional.dropout](https://pytorch.org/docs/stable/generated/torch.nn.functional.dropout.html)
    """

    code = "TL402"
    name = "functional-dropout-always-on"
    summary = "F.dropout without training= stays on in eval()"
    severity = "warning"
    default_enabled = False
    tags = ("correctness", "module")
    requires_text = ('dropout',)
    options = {"module-bases": MODULE_BASES_OPTION}
    evidence = Evidence(probe=probe_functional_dropout, runtime=run_verdict, monitor=FunctionalDropoutMonitor,
                        observe=observe_functional_dropout)

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        name = ctx.call_name(node)
        if name not in _DROPOUTS or ctx.enclosing_module_class() is None:
            return
        if has_star_kwargs(node) or arg_or_keyword(node, 2, "training") is not None:
            return
        if ctx.any_ancestor("tests-training", _branch_on_training):
            return  # `if self.training:` already limits it to training
        p_node = arg_or_keyword(node, 1, "p")
        if p_node is not None and _p_gated(p_node, node, ctx):
            return  # `p=self.p if self.training else 0.0`: off in eval() already
        short = name.rsplit(".", 1)[1]  # type: ignore[union-attr]
        p = 0.5 if p_node is None else literal(p_node)  # 0.5: the default
        self.report(node, DropoutWithoutTraining(function=short),
                    params={"function": short, "p": p if type(p) in (int, float) else None})


def _p_gated(p_node: ast.AST, call: ast.Call, ctx: FileContext) -> bool:
    """Is the probability already zero outside training: it reads `.training` itself, a
    local bound from such an expression, or a parameter that every same-class caller passes
    gated (`self.attend(q, k, dropout_p=self.p if self.training else 0.0)`)?"""
    if _tests_training(p_node):
        return True
    if not isinstance(p_node, ast.Name):
        return False
    value = ctx.value_before(p_node, call.lineno)
    if value is not None:
        return _tests_training(value)
    fn = ctx.function
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or not ctx.classes:
        return False
    params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    if p_node.id not in params and p_node.id not in (a.arg for a in fn.args.kwonlyargs):
        return False
    index = params.index(p_node.id) - 1 if p_node.id in params else None  # minus `self`
    passed = []
    for sub in ast.walk(ctx.classes[-1]):
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr == fn.name \
                and isinstance(sub.func.value, ast.Name) and sub.func.value.id == "self":
            arg = arg_or_keyword(sub, index if index is not None and index >= 0 else 10**6, p_node.id)
            passed.append(arg is not None and _tests_training(arg))
    return bool(passed) and all(passed)
