"""TL103: a training loop that never resets gradients."""

from __future__ import annotations

import ast



from torchlint.analysis.loops import is_backward, is_manual_update, is_optimizer_step, is_zero_grad
from torchlint.checker import FileContext
from torchlint.records import RuntimeResult
from torchlint.rules.base import Evidence, Rule, Violation
import torchlint.runtime.judging as run

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional
    from pathlib import Path


def _per_context_gradients(loop: ast.AST, backward: ast.Call, ctx: FileContext) -> bool:
    """Distributed autograd accumulates into a fresh context per `with dist_autograd.context()`."""
    name = ctx.call_name(backward) or ""
    if name.startswith("torch.distributed.autograd."):
        return True

    def distributed_context(node: ast.AST) -> bool:
        return isinstance(node, (ast.With, ast.AsyncWith)) and any(
            (ctx.call_name(item.context_expr) or "").startswith("torch.distributed.autograd.") for item in node.items)

    body = loop.body  # type: ignore[attr-defined]
    return ctx.body_has("dist-autograd-context", body, distributed_context) \
        or ctx.any_ancestor("dist-autograd-context", distributed_context)


def run_verdict(obs: run.Observation, path: str, rows: tuple[int, int], cwd: Path) -> RuntimeResult:
    """What the run shows: gradients left from the previous step."""
    calls, hits = run.calls_at(obs, "backward", path, rows)
    if not calls:
        return run.not_reached("no backward call ran at this line")
    for e in obs.by_kind["stale_grads"]:
        if run.at(e["site"], path, rows):
            what = f"`{e['name']}`" if e.get("name") else "a parameter"
            return run.verdict("confirmed", f"at step {e['step']}, backward added to gradients left over from the "
                                            f"previous optimizer step ({what} had a gradient of norm {e['norm']:g}): "
                                            "no zero_grad ran since that step", hits)
    steps = max((e["step"] for e in calls), default=0)
    return run.verdict("not-observed", f"ran {hits} time(s) over {steps} optimizer step(s); the gradients were reset "
                                       "(or empty) before each backward that followed a step", hits)


class StaleGradientMonitor:
    """A backward after an optimizer step with no zero_grad since adds to old gradients: the
    first parameter that still held a nonzero gradient, and its norm."""

    def before_backward(self, m: Any, loss: Any, site: Optional[list], fn: str) -> None:
        if fn == "grad" or not m.steps or m.zeroed_since_step or m.backward_since_step:
            return
        for optimizer in list(m.optimizers):
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is not None and bool(p.grad.any()):
                        name = m.parameter_names().get(id(p))
                        m.record("stale_grads", site, name=name, norm=round(float(p.grad.norm()), 6))
                        return


# -- evidence (runs only in the --verify worker: see CONTRIBUTING.md) ----------------------
def probe_missing_zero_grad(params: dict, device: str) -> tuple[str, str]:
    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    model = nn.Linear(2, 1, bias=False).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.0)  # lr 0: the weights stay, grads show accumulation
    x = torch.ones(1, 2, device=device)
    for _ in range(3):
        model(x).sum().backward()  # noqa: TL103 - the hazard, on purpose
        opt.step()
    accumulated = model.weight.grad.detach().cpu().flatten().tolist()  # type: ignore[union-attr]
    single = x.sum(0).cpu().tolist()
    if accumulated != single:
        return "confirmed", f"after 3 steps .grad is {accumulated}; one step's gradient is {single}"
    return "not-reproduced", f".grad after 3 steps is {accumulated}"


def judge_missing_zero_grad(facts: dict, runs: list) -> Optional[tuple[str, str]]:
    from _evidence import first_line, nonzero

    recs = runs[0]["obs"].get("flag") or []
    if any(r.get("exc") is not None for r in recs):
        return "error", f"backward() raised {first_line(next(r['exc'] for r in recs if r.get('exc') is not None))}"
    if len(recs) < 2:
        return None
    held = nonzero(recs[1].get("grads_before"))
    if held:
        name, before = next(iter(held.items()))
        after = (recs[1].get("grads") or {}).get(name)
        return ("confirmed", f"before the second backward() {name}.grad still held the first step's {before}; "
                             f"backward added to it: {after}")
    return "not-reproduced", "the gradients were reset before the second backward()"


class GradientsNeverReset(Violation):
    help = "Call `optimizer.zero_grad()` every iteration (next to `step()` when accumulating)"

    def message(self) -> str:
        return "Gradients are never reset in this loop: each step applies the sum of all past ones"


class MissingZeroGrad(Rule):
    """## What it does
    Flags a loop whose body calls `.backward()` (or `torch.autograd.backward`, `accelerator.backward`)
    and updates the parameters, by an optimizer `step()` or by hand (`w -= lr * w.grad` under
    `no_grad`, `p.data.add_(p.grad, alpha=-lr)`), but never resets gradients inside the loop: no
    `optimizer.zero_grad()`, `model.zero_grad()`, `p.grad = None` or `p.grad.zero_()` (also
    `p.grad.data.zero_()`). Reported at the `backward()` call.

    A reset inside a function of the project that the loop calls (`reset_grad()`, `self.reset()`,
    or a helper imported from another file) counts, one level deep. Loops under `torch.distributed.autograd.context()` (or calling
    `dist_autograd.backward`) are not flagged: distributed autograd keeps gradients per context,
    so each iteration starts clean.

    ## Why is this bad?
    `backward()` *adds* into `.grad`. Without a reset, step *k* applies the sum of the gradients of
    steps 1..k: the effective learning rate grows every iteration and training diverges or
    plateaus, without any error. Gradient accumulation, where `step()` and `zero_grad()` sit
    together under a condition (`if (i + 1) % k == 0:`), is correct and is not flagged; neither is a
    `scheduler.step()` loop without an optimizer step.

    ## Example
    ```python
    for x, y in loader:
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
    ```

    ## Use instead
    ```python
    for x, y in loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [torch.optim.Optimizer.zero_grad](https://pytorch.org/docs/stable/generated/torch.optim.Optimizer.zero_grad.html)
    - [Autograd mechanics](https://pytorch.org/docs/stable/notes/autograd.html)
    """

    code = "TL103"
    name = "missing-zero-grad"
    summary = "Loop calls backward() and step() but never resets gradients"
    peer_checks = {"TG003": "covered", "W5517": "covered"}  # rules_docs/peer-parity.md
    severity = "warning"
    tags = ("correctness", "training-loop")
    requires_text = ('backward',)
    evidence = Evidence(generic_probe=True, probe=probe_missing_zero_grad, slice="call-twice-with-grads", judge=judge_missing_zero_grad,
                        runtime=run_verdict, monitor=StaleGradientMonitor)

    def _check(self, node: ast.AST, ctx: FileContext) -> None:
        backward = None
        stepped = False
        for call in ctx.body_calls(node):
            if backward is None and is_backward(call, ctx):
                backward = call
            elif is_optimizer_step(call):
                stepped = True
        if backward is None:
            return
        if not stepped and not ctx.body_has("manual-update", node.body, is_manual_update):  # type: ignore[attr-defined]
            return  # no update in the loop: gradients may accumulate on purpose (attribution, probing)
        if ctx.followed_has("zero-grad", node, is_zero_grad):
            return  # reset here, or in a same-file helper it calls (`reset_grad()`)
        if _per_context_gradients(node, backward, ctx):
            return
        self.report(backward, GradientsNeverReset())

    visit_For = _check
    visit_AsyncFor = _check
    visit_While = _check
