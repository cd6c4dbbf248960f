"""TL104: backward(), then zero_grad(), then step() in one block."""

from __future__ import annotations

import ast

from torchlint.analysis.loops import is_backward, is_optimizer_step, method_name
from torchlint.checker import FileContext
from torchlint.records import RuntimeResult
from torchlint.rules.base import Evidence, Rule, Violation, dotted
import torchlint.runtime.judging as run

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional
    from pathlib import Path


_BLOCK_FIELDS = ("body", "orelse", "finalbody")


def _expr_call(stmt: ast.stmt) -> Optional[ast.Call]:
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        return stmt.value
    return None


def run_verdict(obs: run.Observation, path: str, rows: tuple[int, int], cwd: Path) -> RuntimeResult:
    """What the run shows: a step that saw zeroed gradients."""
    calls, hits = run.calls_at(obs, "zero_grad", path, rows)
    if not calls:
        return run.not_reached("no zero_grad call ran at this line")
    for e in obs.by_kind["zeroed_before_step"]:
        if run.at(e["site"], path, rows):
            return run.verdict("confirmed", f"at step {e['step']}, this zero_grad ran after the backward and before "
                                            f"the optimizer step at {run.where(e['step_site'], cwd)}, which saw no "
                                            "gradients", hits)
    return run.verdict("not-observed", f"ran {hits} time(s); a backward always ran between it and the next step",
                       hits)


class ZeroedBeforeStepMonitor:
    """An optimizer step whose last gradient event since the previous step was a zero_grad
    that came after a backward: the step saw no gradients."""

    def step(self, m: Any, optimizer: Any, site: Optional[list], event: dict) -> None:
        if m.backward_since_step and m.last_grad_event and m.last_grad_event[0] == "zero_grad":
            m.record("zeroed_before_step", m.last_grad_event[1], step_site=site, always=True)


# -- evidence (runs only in the --verify worker: see CONTRIBUTING.md) ----------------------
def probe_zero_grad_between(params: dict, device: str) -> tuple[str, str]:
    import torch
    import torch.nn as nn

    model = nn.Linear(2, 1).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    before = model.weight.detach().clone()
    model(torch.ones(1, 2, device=device)).sum().backward()
    opt.zero_grad()  # noqa: TL104 - the hazard, on purpose
    opt.step()
    if torch.equal(before, model.weight.detach()):
        return "confirmed", f"step() after zero_grad() left the weights unchanged ({before.cpu().flatten().tolist()})"
    return "not-reproduced", "the weights changed"


def judge_zero_grad_between(facts: dict, runs: list) -> Optional[tuple[str, str]]:
    from _evidence import failed, flag, nonzero

    rec = flag(runs)
    if rec is None or failed(rec, "zero_grad()"):
        return failed(rec, "zero_grad()")
    before = nonzero(rec.get("grads_before"))
    after = nonzero(rec.get("grads"))
    if before and not after:
        name, values = next(iter(before.items()))
        return ("confirmed", f"zero_grad() after backward() cleared the gradients ({name}.grad {values} -> "
                             f"{(rec.get('grads') or {}).get(name) or None}), so the next step() has nothing to apply")
    if not before:
        return "not-reproduced", "there were no gradients to clear when zero_grad() ran"
    return "not-reproduced", "the gradients survived zero_grad()"


class ZeroGradBeforeStep(Violation):
    zero_grad: str  # the call as written, `optimizer.zero_grad`
    help = "Call `zero_grad()` before the forward pass or after `step()`"

    def message(self) -> str:
        return f"`{self.zero_grad}()` between `backward()` and `step()`: the step sees no gradients"


class ZeroGradBetweenBackwardAndStep(Rule):
    """On the 2026-12 held-out corpus (54 projects, independent triage), 0 of 3 findings were true;
    off by default. Enable it with `--extend-select TL104`.

    ## What it does
    Flags, within one block, `.backward()` followed by `zero_grad()` followed by an optimizer
    `.step()`. Reported at the `zero_grad()` call.

    ## Why is this bad?
    `zero_grad()` clears the gradients that `backward()` just computed (since torch 2.0 it sets them
    to `None`), so `step()` sees nothing to apply: with `set_to_none=True` the optimizer skips every
    parameter and the model never learns; with zeros, momentum and weight decay still move the
    weights. There is no error.

    ## Example
    ```python
    loss.backward()
    optimizer.zero_grad()
    optimizer.step()
    ```

    ## Use instead
    ```python
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    ```

    ## Fix safety
    No automatic fix: moving a call changes behaviour; review the loop.

    ## References
    - [torch.optim.Optimizer.zero_grad](https://pytorch.org/docs/stable/generated/torch.optim.Optimizer.zero_grad.html)
    """

    code = "TL104"
    name = "zero-grad-between-backward-and-step"
    summary = "zero_grad() between backward() and step(): the step sees zero gradients"
    severity = "error"
    default_enabled = False
    tags = ("correctness", "training-loop")
    requires_text = ('zero_grad',)
    precision = "very-high"
    evidence = Evidence(generic_probe=True, probe=probe_zero_grad_between, slice="call-with-grads", judge=judge_zero_grad_between,
                        runtime=run_verdict, monitor=ZeroedBeforeStepMonitor)

    def _scan(self, stmts: list[ast.stmt], ctx: FileContext) -> None:
        state = 0
        zero_grad: Optional[ast.Call] = None
        for stmt in stmts:
            call = _expr_call(stmt)
            if call is None:
                continue
            if is_backward(call, ctx):
                state, zero_grad = 1, None
            elif state == 1 and method_name(call) == "zero_grad":
                state, zero_grad = 2, call
            elif state == 2 and is_optimizer_step(call) and zero_grad is not None:
                self.report(zero_grad, ZeroGradBeforeStep(zero_grad=dotted(zero_grad.func)))
                state, zero_grad = 0, None

    def _visit_block(self, node: ast.AST, ctx: FileContext) -> None:
        for field in _BLOCK_FIELDS:
            stmts = getattr(node, field, None)
            if stmts:
                self._scan(stmts, ctx)

    visit_Module = _visit_block
    visit_FunctionDef = _visit_block
    visit_AsyncFunctionDef = _visit_block
    visit_For = _visit_block
    visit_AsyncFor = _visit_block
    visit_While = _visit_block
    visit_If = _visit_block
    visit_With = _visit_block
    visit_AsyncWith = _visit_block
    visit_Try = _visit_block
