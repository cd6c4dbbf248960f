"""TL405: `torch.log(softmax(...))` in a loss instead of `log_softmax`."""

from __future__ import annotations

import ast

from torchlint.analysis.torch_api import TORCH_LOG
from torchlint.analysis.training_step import own_level
from torchlint.checker import FileContext
from torchlint.edits import SAFE, Fix, has_comment, make_fix, replace, text_of
from torchlint.rules.base import Evidence, Rule, Violation, calls_ending

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional


def probe_log_of_softmax(params: dict, device: str) -> tuple[str, str]:
    """`log(softmax(z))` on logits 200 apart, the target the underflowed class; with facts
    `eps` (a number added before the log) the -inf and the NaN cannot happen."""
    import torch

    eps = float(params.get("eps", 0.0))
    z = torch.tensor([[0.0, -200.0, 5.0]], device=device, requires_grad=True)
    log_p = torch.log(torch.softmax(z, dim=1) + eps)
    loss = torch.nn.functional.nll_loss(log_p, torch.tensor([1], device=device))
    loss.backward()
    grad = z.grad
    if not bool(torch.isfinite(loss)) or grad is None or not bool(torch.isfinite(grad).all()):
        return "confirmed", (f"log(softmax(z)) with z = [0, -200, 5]: loss {loss.item()}, gradient "
                             f"{grad.tolist() if grad is not None else None}; log_softmax gives a finite loss "
                             f"{torch.nn.functional.log_softmax(z.detach(), 1)[0, 1].neg().item():.4g}")
    return "not-reproduced", f"with eps={eps}: loss {loss.item():.4g}, gradients finite"


_SOFTMAX = frozenset({"torch.softmax", "torch.nn.functional.softmax", "torch.special.softmax"})
_LOSS_CALLS = frozenset({"nll_loss", "kl_div", "cross_entropy", "binary_cross_entropy"})


def _is_softmax(node: ast.AST, ctx: FileContext) -> bool:
    if not isinstance(node, ast.Call):
        return False
    if ctx.call_name(node) in _SOFTMAX:
        return True
    func = node.func
    return isinstance(func, ast.Attribute) and func.attr == "softmax" and ctx.call_name(node) is None


def _names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _target_names(stmt: ast.AST) -> set[str]:
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] \
        if isinstance(stmt, (ast.AugAssign, ast.AnnAssign)) else []  # type: ignore[attr-defined]
    found = set()
    for target in targets:
        for n in ast.walk(target):
            if isinstance(n, ast.Name):
                found.add(n.id)
            elif isinstance(n, ast.Attribute):
                found.add(n.attr)
    return found


def _loss_named(names: set[str]) -> bool:
    return any("loss" in n.lower() for n in names)


class LogOfSoftmaxViolation(Violation):
    help = "Use `log_softmax(...)` (or `Categorical(logits=...)`)"

    def message(self) -> str:
        return "`log` of a softmax: an underflowed probability gives -inf and NaN gradients"


class LogOfSoftmax(Rule):
    """## What it does
    Flags `torch.log(p)` and `p.log()` where `p` is a softmax output (`F.softmax(...)`,
    `torch.softmax(...)`, `x.softmax(dim)`, a local variable bound to one, or an element of it:
    `probs[action]`, `probs.gather(...)`) when the result is used in a loss: inside a call of a
    loss function (`nll_loss`, `kl_div`, a name with `loss` in it), in an assignment to a name with
    `loss` in it, in the `return` of a function so named, or assigned to a name that such a
    statement of the same function reads later (`log_probs = torch.log(probs)` ...
    `loss = -(log_probs * returns).mean()`).

    `torch.log(probs + eps)` and `torch.log(probs.clamp(min=eps))` are not flagged: the epsilon
    removes the -inf and the NaN this rule is about. It does not remove the precision loss:
    checked on torch 2.13, with logits `[0, -200, 5]` and target class 1, `log(softmax + 1e-8)`
    gives a loss of 18.4 and a gradient of exactly 0, where `log_softmax` gives 205 and a
    gradient of -1. That is a weaker signal rather than a failure, so it is left out.

    ## Why is this bad?
    The softmax of a large negative logit underflows to 0 in float32 (and far sooner in float16),
    and `log(0)` is `-inf`. Checked on torch 2.13: `torch.log(F.softmax(z, 1))` with
    `z = [0, -200, 5]` gives `-inf` for the middle class, and `nll_loss` on it gives an infinite
    loss and NaN gradients for every logit, which the optimizer step writes into the weights.
    `log_softmax` computes the same value with the log-sum-exp trick and stays finite.

    ## Example
    ```python
    probs = F.softmax(logits, dim=-1)
    loss = -(torch.log(probs) * target).sum(dim=-1).mean()
    ```

    ## Use instead
    ```python
    log_probs = F.log_softmax(logits, dim=-1)
    loss = -(log_probs * target).sum(dim=-1).mean()
    # or, for a policy: torch.distributions.Categorical(logits=logits).log_prob(action)
    ```

    ## Fix safety
    Safe, offered only when the softmax call is inside the log (`torch.log(F.softmax(x, 1))` ->
    `F.log_softmax(x, 1)`): the two compute the same value wherever the first is finite.

    ## References
    - [torch.nn.functional.log_softmax](https://pytorch.org/docs/stable/generated/torch.nn.functional.log_softmax.html)
    - [torch.distributions.Categorical](https://pytorch.org/docs/stable/distributions.html#categorical)
    """

    code = "TL405"
    name = "log-of-softmax"
    summary = "torch.log of a softmax output in a loss: -inf and NaN gradients on underflow; use log_softmax"
    peer_checks = {"W5514": "partly: `log(softmax(x))`"}  # rules_docs/peer-parity.md
    severity = "warning"
    tags = ("correctness", "numerics", "loss")
    requires_text = ("softmax",)
    evidence = Evidence(probe=probe_log_of_softmax)

    def setup(self, ctx: FileContext) -> None:
        self._loss_reads: dict[int, list[tuple[int, set[str]]]] = {}

    @calls_ending(TORCH_LOG.lasts, ["log"])
    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        if len(node.args) == 1 and not node.keywords and ctx.call_among(node, TORCH_LOG) is not None:
            arg = node.args[0]
        elif isinstance(node.func, ast.Attribute) and node.func.attr == "log" and not node.args \
                and not node.keywords and ctx.call_name(node) is None:
            arg = node.func.value
        else:
            return
        inner = self._softmax_of(arg, node.lineno, ctx)
        if inner is None or not self._in_loss(node, ctx):
            return
        fix = _fix(node, arg, ctx) if inner is arg else None
        self.report(node, LogOfSoftmaxViolation(), params={}, fix=fix)

    def _softmax_of(self, arg: ast.AST, lineno: int, ctx: FileContext) -> Optional[ast.AST]:
        """The softmax call `arg` reads: itself, a variable bound to it, or an element of it."""
        if isinstance(arg, ast.Subscript):
            arg = arg.value
        elif isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute) and arg.func.attr == "gather":
            arg = arg.func.value
        if _is_softmax(arg, ctx):
            return arg
        if isinstance(arg, ast.Name):
            value = ctx.value_before(arg, lineno)
            if value is not None and _is_softmax(value, ctx):
                return value
        return None

    def _in_loss(self, node: ast.Call, ctx: FileContext) -> bool:
        stmt: Optional[ast.stmt] = None
        for parent in reversed(ctx.parents):
            if isinstance(parent, ast.Call) and _calls_a_loss(parent, ctx):
                return True
            if isinstance(parent, ast.stmt):
                stmt = parent
                break
        if stmt is None:
            return False
        fn = ctx.function
        if isinstance(stmt, ast.Return):
            return fn is not None and "loss" in getattr(fn, "name", "").lower()
        names = _target_names(stmt)
        if _loss_named(names):
            return True
        names = {t.id for t in getattr(stmt, "targets", [getattr(stmt, "target", None)])
                 if isinstance(t, ast.Name)}  # a variable a later loss statement may read
        return bool(names) and any(line > stmt.lineno and names & reads for line, reads in self._reads(ctx))

    def _reads(self, ctx: FileContext) -> list[tuple[int, set[str]]]:
        """(line, names read) of the loss statements of the current function (or module)."""
        scope = ctx.scope
        found = self._loss_reads.get(id(scope))
        if found is None:
            found = self._loss_reads[id(scope)] = []
            fn_is_loss = "loss" in getattr(scope, "name", "").lower()
            for sub in own_level_all(scope):
                value = getattr(sub, "value", None)
                if value is None:
                    continue
                if isinstance(sub, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and _loss_named(_target_names(sub)):
                    found.append((sub.lineno, _names_in(value)))
                elif isinstance(sub, ast.Return) and fn_is_loss:
                    found.append((sub.lineno, _names_in(value)))
        return found


def own_level_all(scope: ast.AST) -> list[ast.AST]:
    """The statements of a function (or module), nested loops included, nested defs not."""
    out: list[ast.AST] = []
    for node in own_level(scope):
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            out.extend(own_level_all(node))
        if isinstance(node, ast.stmt):
            out.append(node)
    return out


def _calls_a_loss(call: ast.Call, ctx: FileContext) -> bool:
    func = call.func
    last = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return last in _LOSS_CALLS or "loss" in last.lower() or (ctx.call_name(call) or "").endswith("Loss")


def _fix(node: ast.Call, softmax: ast.AST, ctx: FileContext) -> Optional[Fix]:
    assert isinstance(softmax, ast.Call)
    whole = text_of(ctx.source, softmax)
    func = text_of(ctx.source, softmax.func)
    if has_comment(text_of(ctx.source, node)) or not func.endswith("softmax") or not whole.startswith(func):
        return None
    new = func[: -len("softmax")] + "log_softmax" + whole[len(func):]
    return make_fix("Use `log_softmax`", [replace(ctx.source, node, new)], SAFE)
