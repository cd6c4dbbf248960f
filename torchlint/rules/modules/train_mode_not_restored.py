"""TL704: a training loop that switches to eval() and never back to train()."""

from __future__ import annotations

import ast



from torchlint.analysis.frozen import is_copy_of_model
from torchlint.analysis.loops import is_backward, is_optimizer_step, method_name, receiver_name
from torchlint.checker import FileContext
from torchlint.records import RuntimeResult
from torchlint.rules.base import Evidence, Rule, Violation, dotted, literal
import torchlint.runtime.judging as run

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional
    from pathlib import Path


def _is_train_call(call: ast.Call) -> bool:
    if method_name(call) != "train":
        return False
    return not call.args or literal(call.args[0]) is not False


def _steps(call: ast.Call) -> bool:
    """An optimizer step: `opt.step()`, `sgd.step()`, `scaler.step(opt)`; not a scheduler's."""
    if is_optimizer_step(call):
        return True
    name = receiver_name(call).lower()
    return method_name(call) == "step" and "sched" not in name and not name.startswith("lr") and "env" not in name


def run_verdict(obs: run.Observation, path: str, rows: tuple[int, int], cwd: Path) -> RuntimeResult:
    """What the run shows: backward in the eval mode that line set."""
    hits = obs.hits("eval", path, rows, 0)
    for e in obs.by_kind["eval_backward"]:
        if run.at(e.get("eval_site"), path, rows):
            return run.verdict("confirmed", f"at step {e['step']}, backward at {run.where(e['site'], cwd)} ran through "
                                            f"{e['module']} still in eval mode from this eval() call: its "
                                            f"{', '.join(e['layers'])} layer(s) behaved as at evaluation", max(hits, 1))
    if not hits:
        return run.not_reached("no eval() call ran at this line")
    return run.verdict("not-observed", f"ran {hits} time(s); no backward ran through a Dropout/BatchNorm model left in "
                                       "eval mode by it", hits)


# -- evidence (runs only in the --verify worker: see CONTRIBUTING.md) ----------------------
def probe_train_mode(params: dict, device: str) -> tuple[str, str]:
    import torch
    import torch.nn as nn

    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    modes = []
    for _ in range(2):
        modes.append(model.training)
        model(torch.randn(2, 4, device=device)).sum().backward()  # noqa: TL103 - the hazard, on purpose
        opt.step()
        model.eval()  # noqa: TL704 - the hazard, on purpose
    if modes == [True, False]:
        return "confirmed", "the second epoch ran its backward pass with model.training == False (dropout off)"
    return "not-reproduced", f"training flags per epoch: {modes}"


def judge_train_mode(facts: dict, runs: list) -> Optional[tuple[str, str]]:
    recs = runs[0]["obs"].get("backward")
    if not runs[0]["obs"].get("flag") or not recs:
        return None
    modes = recs[0].get("modes") or {}
    off = sorted(name for name, training in modes.items() if not training)
    if off:
        return ("confirmed", f"at the first backward() after eval(), {', '.join(off[:3])} still had training == "
                             "False: dropout off and batch norm on running statistics while training")
    if modes:
        return "not-reproduced", f"at the next backward() every module was back in training mode ({', '.join(modes)})"
    return None


class EvalInTrainingLoop(Violation):
    call: str  # `model.eval`, or a helper that calls `.eval()`
    helper: bool = False
    help = "Call `model.train()` at the start of each epoch"

    def message(self) -> str:
        what = f"`{self.call}()`, which calls `.eval()`," if self.helper else f"`{self.call}()`"
        return f"{what} runs in a training loop that never calls `.train()`"


class TrainModeNotRestored(Rule):
    """On the 2026-12 held-out corpus (54 projects, independent triage), 1 of 14 findings were true;
    off by default. Enable it with `--extend-select TL704`.

    ## What it does
    Flags `model.eval()` inside a loop that trains (calls `.backward()`) when the loop never calls
    `.train()`. Reported at the `.eval()` call, or at the call of a function of the same file that
    calls `.eval()` (an `evaluate()` helper) without switching back. Calls to same-file helpers
    count, one level deep, on both sides.

    It leaves out `eval()` of a copy that is not the trained model: a `copy.deepcopy(...)`, an
    `AveragedModel`/`ModelEma`/EMA helper, or a name like `ema`, `shadow`, `teacher`, `target`,
    `*_copy`. And it needs the loop to train: a `backward()` and an optimizer `step()`
    (itself or in a same-file helper); a loop that only inspects gradients (saliency, gradient
    norms) never trains, so eval mode there is harmless.

    ## Why is this bad?
    `eval()` switches dropout off and makes batch norm use running statistics. If the training
    loop never switches back, every epoch after the first validation trains in eval mode: no
    dropout regularisation, frozen batch-norm statistics. Accuracy is quietly worse.

    ## Example
    ```python
    def train_one_epoch(model, loader):
        for x, y in loader:
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()
            optimizer.step()

    for epoch in range(epochs):
        train_one_epoch(model, loader)
        model.eval()
        validate(model)
    ```

    ## Use instead
    ```python
    def train_one_epoch(model, loader):
        for x, y in loader:
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()
            optimizer.step()

    for epoch in range(epochs):
        model.train()
        train_one_epoch(model, loader)
        model.eval()
        validate(model)
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [torch.nn.Module.train](https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.train)
    """

    code = "TL704"
    name = "train-mode-not-restored"
    summary = "Loop calls model.eval() but never model.train(): later epochs train in eval mode"
    peer_checks = {"TG011": "covered", "W9998": "covered"}  # rules_docs/peer-parity.md
    severity = "warning"
    default_enabled = False
    tags = ("correctness", "training-loop")
    requires_text = ('.eval(',)

    evidence = Evidence(generic_probe=True, probe=probe_train_mode, slice="mode-at-backward", judge=judge_train_mode, runtime=run_verdict)

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        if not ctx.loops:
            return
        if method_name(node) == "eval" and not node.args:
            # `ema.eval()`, `deepcopy(model).eval()`: a copy, not the model being trained.
            if is_copy_of_model(ctx, node.func.value, node.lineno):  # type: ignore[attr-defined]
                return
            violation = EvalInTrainingLoop(call=dotted(node.func))
        else:
            helper = ctx.called_function(node)
            if helper is None:
                return
            calls = ctx.body_calls(helper)
            if not any(method_name(c) == "eval" and not c.args for c in calls) or any(_is_train_call(c) for c in calls):
                return
            violation = EvalInTrainingLoop(call=dotted(node.func), helper=True)
        for loop in reversed(ctx.loops):
            calls = ctx.followed_calls(loop)
            # Training means a backward and an optimizer step: a loop that only inspects
            # gradients (saliency, gradient norms) never trains, so eval mode there is harmless.
            if not any(is_backward(c, ctx) for c in calls) or not any(_steps(c) for c in calls):
                continue
            if any(_is_train_call(c) for c in calls):
                return
            self.report(node, violation)
            return
