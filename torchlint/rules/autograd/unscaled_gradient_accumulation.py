"""TL112: gradient accumulation whose loss is never divided by the accumulation count."""

from __future__ import annotations

import ast

from torchlint.analysis.loops import is_backward, is_optimizer_step, is_zero_grad, receiver_name
from torchlint.analysis.training_step import loss_of_backward
from torchlint.checker import FileContext
from torchlint.rules.base import Evidence, Rule, Violation, dotted, keyword

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterator, Optional


def probe_unscaled_accumulation(params: dict, device: str) -> tuple[str, str]:
    """One step accumulated over 4 micro-batches without dividing the loss, against one step
    on the whole batch. Facts: `optimizer` (a `torch.optim` class name), `clipped` (a
    `clip_grad_norm_` before the step)."""
    import torch

    name = str(params.get("optimizer", "SGD"))
    optimizer_class = getattr(torch.optim, name, None)
    if optimizer_class is None:
        return "skipped", f"torch.optim has no {name}"
    clipped = bool(params.get("clipped", False))

    def step(parts: int) -> torch.Tensor:
        torch.manual_seed(0)
        model = torch.nn.Linear(3, 1).to(device)
        opt = optimizer_class(model.parameters(), lr=0.1)
        x, y = torch.randn(8, 3, device=device), torch.randn(8, 1, device=device)
        for i in range(parts):
            rows = slice(i * 8 // parts, (i + 1) * 8 // parts)
            torch.nn.functional.mse_loss(model(x[rows]), y[rows]).backward()  # not divided by `parts`
        if clipped:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.05)
        opt.step()
        return model.weight.detach().clone()

    gap = (step(1) - step(4)).abs().max().item()
    if gap > 1e-5:
        return "confirmed", (f"torch.optim.{name}{' with clipping' if clipped else ''}: the step over 4 undivided "
                             f"micro-batches differs from the whole-batch step by {gap:.3g}")
    return "not-reproduced", f"torch.optim.{name}: the accumulated step equals the whole-batch step ({gap:.1g})"


# Optimizers whose update is unchanged when every gradient is multiplied by a constant (up to
# eps): accumulating without dividing changes nothing unless the gradients are clipped.
_SCALE_INVARIANT = frozenset({"Adam", "AdamW", "Adamax", "NAdam", "RAdam", "RMSprop", "Adagrad", "SparseAdam"})
_CLIPS = frozenset({"torch.nn.utils.clip_grad_norm_", "torch.nn.utils.clip_grad_value_", "torch.nn.utils.clip_grad_norm"})
_WITH = (ast.With, ast.AsyncWith)


def _unconditional(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements that run on every pass of a loop body: its own, and those of `with` blocks."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, _WITH):
            yield from _unconditional(stmt.body)


def _modulus(test: ast.AST) -> Optional[ast.AST]:
    """`M` in `if (i + 1) % M == 0:` (also inside an `or` with a last-batch test)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        return next((m for m in map(_modulus, test.values) if m is not None), None)
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq) \
            and isinstance(test.left, ast.BinOp) and isinstance(test.left.op, ast.Mod):
        return test.left.right
    return None


def _scales(node: ast.AST) -> bool:
    """A division or multiplication anywhere in `node`: the loss may be scaled there."""
    for n in ast.walk(node):
        if isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Div, ast.FloorDiv, ast.Mult)):
            return True
        if isinstance(n, ast.AugAssign) and isinstance(n.op, (ast.Div, ast.FloorDiv, ast.Mult)):
            return True
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("div", "div_", "mul", "mul_"):
            return True
    return False


def _identifier(node: ast.AST) -> str:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""


class LossNotDividedByAccumulation(Violation):
    count: str  # the accumulation count as written (`accum_steps`)

    def _shown(self) -> str:
        return f"`{self.count}`" if len(self.count) <= 30 else "the accumulation count"

    def message(self) -> str:
        return f"Accumulated gradients are summed, and the loss is never divided by {self._shown()}"

    def help_text(self) -> str:
        return f"Divide the loss by {self._shown()} before `backward()`"


class UnscaledGradientAccumulation(Rule):
    """On the 2026-12 held-out corpus (54 projects, independent triage), it fired on nothing (0 findings); off by
    default. Enable it with `--extend-select TL112`.

    ## What it does
    Flags the `backward()` of a gradient-accumulation loop that never divides the loss by the
    accumulation count. The shape is strict:

    - the loop body calls `loss.backward()` (or `scaler.scale(loss).backward()`) on every
      iteration, not under an `if`;
    - an `if (i + 1) % accum == 0:` (possibly `or`-ed with a last-batch test) holds both the
      optimizer `step()` and a `zero_grad()`, and the loop steps nowhere else;
    - nothing on the loss's path in the loop body divides or multiplies (`loss / accum`,
      `loss * scale`, `.div(...)`), the loss is not computed by a same-file function (which may
      divide it), no gradient is rescaled (`p.grad /= accum`, `p.grad.div_(...)`), and the
      optimizer's `lr=` does not mention the accumulation count;
    - the optimizer is built in the same file, and its step depends on the gradient's scale:
      SGD and the other optimizers not listed here. Adam, AdamW, Adamax, NAdam, RAdam, RMSprop and
      Adagrad divide by a running gradient magnitude, so a constant factor cancels out (checked on
      torch 2.13: the accumulated and whole-batch Adam steps are equal, with or without
      `clip_grad_norm_`, which keeps the direction), and are left out.

    Silent on GAN critic schedules (a backward or step outside the `if`), on `accelerator.backward`
    / `engine.backward` (they scale by the accumulation count themselves), and in files that use
    `reduction="sum"` (a summed loss accumulates to the whole-batch sum, which is consistent).

    Off by default: a peer tool's looser version of this check was 0 of 10 true on GAN critic
    schedules. This one is strict by construction, but its precision on real code has not been
    measured yet; select `TL112` to use it.

    ## Why is this bad?
    `backward()` adds into `.grad`, so after `accum` micro-batches the gradient is the *sum* of
    `accum` mean-reduced gradients: `accum` times the gradient of the whole batch. With SGD the
    step is `accum` times too large (a tuned learning rate is effectively multiplied by
    `accum`), and a `clip_grad_norm_` threshold bites `accum` times earlier. Checked on torch 2.13: an SGD step over 4 undivided micro-batches differs from the
    whole-batch step.

    ## Example
    ```python
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for i, (x, y) in enumerate(loader):
        loss = criterion(model(x), y)
        loss.backward()
        if (i + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
    ```

    ## Use instead
    ```python
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for i, (x, y) in enumerate(loader):
        loss = criterion(model(x), y) / accum_steps
        loss.backward()
        if (i + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
    ```

    ## Fix safety
    No automatic fix: dividing the loss changes the effective learning rate of a tuned run.

    ## References
    - [Autograd mechanics: gradient accumulation](https://pytorch.org/docs/stable/notes/autograd.html)
    - [torch.optim](https://pytorch.org/docs/stable/optim.html)
    """

    code = "TL112"
    name = "unscaled-gradient-accumulation"
    summary = "Gradient accumulation whose loss is not divided by the accumulation count"
    peer_checks = {"TG014": "covered in the strict shape (torch-preflight's loose version was 0 of 10 true on GAN critic schedules)"}  # rules_docs/peer-parity.md
    severity = "warning"
    tags = ("correctness", "training-loop")
    requires_text = ("%",)
    default_enabled = False
    evidence = Evidence(probe=probe_unscaled_accumulation)

    def setup(self, ctx: FileContext) -> None:
        self._optimizers: Optional[dict[str, ast.Call]] = None
        self._summed: Optional[bool] = None

    def _check(self, loop: ast.For, ctx: FileContext) -> None:
        body = list(_unconditional(loop.body))
        gates = [s for s in body if isinstance(s, ast.If) and _modulus(s.test) is not None]
        backwards = [s.value for s in body if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call)
                     and is_backward(s.value, ctx)]
        if len(gates) != 1 or len(backwards) != 1:
            return
        gate, backward = gates[0], backwards[0]
        gated = [n for n in ast.walk(gate) if isinstance(n, ast.Call)]
        steps = [c for c in gated if is_optimizer_step(c)]
        if not steps or not any(is_zero_grad(n) for n in ast.walk(gate)):
            return
        calls = ctx.followed_calls(loop)
        inside = {id(c) for c in gated}
        if any((is_optimizer_step(c) or is_backward(c, ctx)) and id(c) not in inside and c is not backward
               for c in calls):
            return  # another step or backward outside the gate: a critic schedule, a second model
        if self._scaled(loop, backward, ctx) or self._lr_scaled(steps[0], _modulus(gate.test), ctx):  # type: ignore[arg-type]
            return
        if not self._scale_matters(steps[0], ctx):
            return
        count = dotted(_modulus(gate.test))  # type: ignore[arg-type]
        self.report(backward, LossNotDividedByAccumulation(count=count),
                    params={"optimizer": self._optimizer_class(steps[0], ctx) or "SGD",
                            "clipped": any(ctx.call_name(c) in _CLIPS for c in calls)})

    visit_For = _check
    visit_AsyncFor = _check
    visit_While = _check

    def _scaled(self, loop: ast.AST, backward: ast.Call, ctx: FileContext) -> bool:
        """Is the loss divided or multiplied on its path in the loop, or a gradient rescaled?"""
        if self._file_sums(ctx):
            return True
        func = backward.func
        if not isinstance(func, ast.Attribute) or (backward.args and ctx.call_name(backward) != "torch.autograd.backward"):
            return True  # `accelerator.backward(loss)`: the wrapper scales by its accumulation count
        exprs = loss_of_backward(backward, ctx)
        if any(_scales(e) for e in exprs):
            return True
        wanted = {n.id for e in exprs for n in ast.walk(e) if isinstance(n, ast.Name)}
        assigns = [n for n in ast.walk(loop) if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))]
        for node in assigns:  # gradients rescaled by hand: `p.grad /= k`, `p.grad.data.div_(k)`
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            if isinstance(target, ast.Attribute) and target.attr == "grad" and _scales(node):
                return True
        for call in (n for n in ast.walk(loop) if isinstance(n, ast.Call)):
            if isinstance(call.func, ast.Attribute) and call.func.attr in ("div_", "mul_") \
                    and "grad" in dotted(call.func.value):
                return True
        changed = True
        while changed:  # follow the names the loss is computed from, within the loop
            changed = False
            for node in assigns:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names = {t.id for tgt in targets for t in ast.walk(tgt) if isinstance(t, ast.Name)}
                if not names & wanted or node.value is None:
                    continue
                if _scales(node) or any(isinstance(c, ast.Call) and ctx.called_function(c) is not None
                                        for c in ast.walk(node.value)):
                    return True
                reads = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)} - wanted
                if reads:
                    wanted |= reads
                    changed = True
        return False

    def _lr_scaled(self, step: ast.Call, accum: ast.AST, ctx: FileContext) -> bool:
        built = self._optimizer(step, ctx)
        lr = keyword(built, "lr") if built is not None else None
        name = _identifier(accum)
        return lr is not None and bool(name) and any(_identifier(n) == name for n in ast.walk(lr.value))

    def _scale_matters(self, step: ast.Call, ctx: FileContext) -> bool:
        found = self._optimizer_class(step, ctx)
        return found is not None and found not in _SCALE_INVARIANT

    def _optimizer_class(self, step: ast.Call, ctx: FileContext) -> Optional[str]:
        built = self._optimizer(step, ctx)
        name = ctx.module_scope.imports.call_name(built) if built is not None else None
        if name is None or not name.startswith("torch.optim.") or name.count(".") != 2:
            return None
        return name.rsplit(".", 1)[1]

    def _optimizer(self, step: ast.Call, ctx: FileContext) -> Optional[ast.Call]:
        """The one `opt = torch.optim.X(...)` of the file for the stepped optimizer's name."""
        if self._optimizers is None:
            self._optimizers = {}
            seen: dict[str, int] = {}
            for node in ast.walk(ctx.tree):
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.value, ast.Call):
                    name = _identifier(node.targets[0])
                    qual = ctx.module_scope.imports.call_name(node.value) or ""
                    if name and qual.startswith("torch.optim.") and "lr_scheduler" not in qual:
                        seen[name] = seen.get(name, 0) + 1
                        self._optimizers[name] = node.value
            for name, count in seen.items():
                if count > 1:
                    del self._optimizers[name]  # several optimizers of that name: unknown which
        if step.args and "scaler" in receiver_name(step).lower():
            return self._optimizers.get(_identifier(step.args[0]))
        return self._optimizers.get(receiver_name(step))

    def _file_sums(self, ctx: FileContext) -> bool:
        if self._summed is None:
            text = ctx.source.text
            self._summed = "reduction='sum'" in text or 'reduction="sum"' in text
        return self._summed
