"""TL110: a GAN discriminator step on the generator's output without `.detach()`."""

from __future__ import annotations

import ast
import re

from torchlint.analysis.loops import is_optimizer_step, receiver_name
from torchlint.analysis.training_step import current_body, own_level
from torchlint.checker import FileContext
from torchlint.rules.base import Evidence, Rule, Violation, dotted, keyword

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional


def probe_gan_detach(params: dict, device: str) -> tuple[str, str]:
    """A discriminator step on `fake = G(z)`, then the generator step through `D(fake)`.
    With facts `detached`, the discriminator gets `fake.detach()`."""
    import torch

    torch.manual_seed(0)
    g, d = torch.nn.Linear(2, 2).to(device), torch.nn.Linear(2, 1).to(device)
    opt_g, opt_d = torch.optim.SGD(g.parameters(), lr=0.1), torch.optim.SGD(d.parameters(), lr=0.1)
    fake = g(torch.randn(4, 2, device=device))
    d_in = fake.detach() if params.get("detached") else fake
    opt_d.zero_grad()
    d(d_in).mean().backward()
    opt_d.step()
    reached = g.weight.grad is not None
    opt_g.zero_grad()
    try:
        (-d(fake).mean()).backward()
    except RuntimeError as exc:
        return "confirmed", (f"the discriminator's backward reached the generator (grads set: {reached}), and the "
                             f"generator's backward then raised RuntimeError: {str(exc).splitlines()[0][:90]}")
    opt_g.step()
    if reached:
        return "confirmed", "the discriminator's backward wrote gradients into the generator's parameters"
    return "not-reproduced", "the discriminator step left the generator's graph alone; the generator step ran"


_DROP = frozenset({"net", "model", "self", "opt", "optim", "optimizer", "optimiser", "the", "my"})
_D = frozenset({"d", "disc", "discriminator", "critic", "dis", "netd"})
_G = frozenset({"g", "gen", "generator", "netg"})
_GRAD_OFF = frozenset({"torch.no_grad", "torch.inference_mode"})


def role(name: str) -> Optional[str]:
    """'D' for a discriminator-like name (`netD`, `D_A`, `optimizer_D`, `disc`), 'G' for a
    generator-like one, None otherwise."""
    tokens = [t.lower() for t in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", name)]
    tokens = [t for t in tokens if t not in _DROP]
    if not tokens:
        return None
    return "D" if tokens[0] in _D else "G" if tokens[0] in _G else None


def _func_role(call: ast.Call) -> Optional[str]:
    func = call.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    return role(name) if name else None


def _step_role(call: ast.Call) -> Optional[str]:
    if call.args and "scaler" in receiver_name(call).lower():
        arg = call.args[0]
        name = arg.id if isinstance(arg, ast.Name) else arg.attr if isinstance(arg, ast.Attribute) else ""
        return role(name) if name else None
    return role(receiver_name(call))


def _regenerated_and_zeroed(fake: ast.AST, backward: ast.Call, nodes: list[ast.AST]) -> bool:
    """After the discriminator's backward, the generator's gradients are zeroed
    (`optimizer_G.zero_grad()`, `netG.zero_grad()`) before its step, and the generator step
    does not reuse `fake`'s freed graph (it runs the generator again): the stray gradients are
    discarded and nothing raises, so only compute is lost."""
    after = [n for n in nodes if getattr(n, "lineno", 0) > backward.lineno]
    g_step = min((c.lineno for c in after if isinstance(c, ast.Call) and is_optimizer_step(c)
                  and _step_role(c) == "G"), default=0)
    zeroed = any(isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == "zero_grad"
                 and role(receiver_name(c)) == "G" and c.lineno < g_step for c in after)
    if not zeroed:
        return False
    if not isinstance(fake, ast.Name):
        return True  # `D(G(z))` inline: each use runs the generator again
    rebound = min((a.lineno for a in after if isinstance(a, ast.Assign)
                   and any(isinstance(t, ast.Name) and t.id == fake.id for t in a.targets)), default=g_step)
    return not any(isinstance(n, ast.Name) and n.id == fake.id and isinstance(n.ctx, ast.Load)
                   and n.lineno < min(rebound, g_step) for n in after)


class FakeNotDetached(Violation):
    fake: str  # the generator's output as written, when it is short
    # The generator step runs the generator again and zeroes its gradients first: the update is
    # right, and the cost is a generator backward every discriminator step.
    wasted_only: bool = False
    help = "Give the discriminator `fake.detach()` for its own step"

    def message(self) -> str:
        shown = f"`{self.fake}`" if len(self.fake) <= 24 else "the generator's output"
        if self.wasted_only:
            return f"The discriminator loss gets {shown} undetached: a wasted generator backward every step"
        return f"The discriminator loss gets {shown} without `.detach()`: its backward runs into the generator"


class GanDiscriminatorWithoutDetach(Rule):
    """## What it does
    Flags the backward of a discriminator loss that feeds the discriminator the generator's
    output without `.detach()`. The shape is strict, in one loop or function body:

    - `fake = G(z)` (a call of a generator-like name: `G`, `netG`, `generator`, `self.gen`...),
      not under `torch.no_grad()`, and not `G(z).detach()`;
    - a discriminator-like call (`D`, `netD`, `discriminator`, `critic`...) on `fake` itself (or
      on `G(z)` inline) in the expression of the loss that is `backward()`ed, directly or
      through variables assigned in the body;
    - after that backward, a `step()` of a discriminator optimizer (`optimizer_D`, `optD`,
      `d_optimizer`, `scaler.step(opt_disc)`), and somewhere in the body a generator optimizer
      step.

    Not flagged: `retain_graph=` or `inputs=` on the backward, bodies that toggle
    `requires_grad` (freezing the generator), and any name that does not read as a generator
    or discriminator. Where the generator step runs the generator again and zeroes its
    gradients before stepping, the update is right and the message says what is lost: a
    backward through the generator on every discriminator step.

    ## Why is this bad?
    Without `.detach()`, the discriminator loss's backward continues into the generator's graph:
    it computes generator gradients that no discriminator step uses, and frees the generator's
    graph. Checked on torch 2.13: the discriminator backward sets `.grad` on the generator's
    parameters, and a following generator backward through `D(fake)` raises
    `RuntimeError: Trying to backward through the graph a second time`. Code that re-runs the
    generator or passes `retain_graph=True` to get past that error adds the discriminator's
    gradients into the generator's update when its `zero_grad()` is not in between.

    ## Example
    ```python
    for real, _ in loader:
        fake = netG(torch.randn(real.size(0), nz))
        d_loss = criterion(netD(real), ones) + criterion(netD(fake), zeros)
        optimizer_D.zero_grad()
        d_loss.backward()
        optimizer_D.step()
        g_loss = criterion(netD(fake), ones)
        optimizer_G.zero_grad()
        g_loss.backward()
        optimizer_G.step()
    ```

    ## Use instead
    ```python
    for real, _ in loader:
        fake = netG(torch.randn(real.size(0), nz))
        d_loss = criterion(netD(real), ones) + criterion(netD(fake.detach()), zeros)
        optimizer_D.zero_grad()
        d_loss.backward()
        optimizer_D.step()
        g_loss = criterion(netD(fake), ones)
        optimizer_G.zero_grad()
        g_loss.backward()
        optimizer_G.step()
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [DCGAN tutorial: training the discriminator](https://pytorch.org/tutorials/beginner/dcgan_faces_tutorial.html)
    - [torch.Tensor.detach](https://pytorch.org/docs/stable/generated/torch.Tensor.detach.html)
    """

    code = "TL110"
    name = "gan-discriminator-without-detach"
    summary = "Discriminator step on the generator's output without .detach(): its backward runs into the generator"
    severity = "warning"
    tags = ("correctness", "training-loop")
    requires_text = ("backward",)
    evidence = Evidence(probe=probe_gan_detach,
                        crash=r"Trying to backward through the graph a second time")

    def setup(self, ctx: FileContext) -> None:
        self._bodies: dict[int, list[ast.AST]] = {}
        self._step_lines: dict[int, tuple[int, bool]] = {}
        self._both: dict[int, bool] = {}  # see `_may_step_both`

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        func = node.func
        if not (isinstance(func, ast.Attribute) and func.attr == "backward" and isinstance(func.value, ast.Name)) \
                or node.args or keyword(node, "retain_graph") is not None or keyword(node, "inputs") is not None:
            return
        body, _ = current_body(ctx)
        if not self._may_step_both(body, ctx):
            return
        last_d_step, g_steps = self._steps(body)
        if last_d_step <= node.lineno or not g_steps:
            return  # no discriminator step after this backward, or no generator step at all
        nodes = self._nodes(body)
        if self._toggles_grad(body):
            return
        fake = self._undetached_fake(func.value.id, node, nodes, ctx)
        if fake is None:
            return
        self.report(node, FakeNotDetached(fake=dotted(fake), wasted_only=_regenerated_and_zeroed(fake, node, nodes)),
                    params={"detached": False})

    def _toggles_grad(self, body: ast.AST) -> bool:
        """`p.requires_grad = False`, `requires_grad_(False)`, `set_requires_grad(netG, False)`
        anywhere in the body, nested loops included: the author freezes a network by hand."""
        key = -id(body)
        if key not in self._bodies:
            self._bodies[key] = [n for n in ast.walk(body) if "requires_grad" in (
                getattr(n, "attr", None) or getattr(n, "id", None) or getattr(n, "arg", None) or "")][:1]
        return bool(self._bodies[key])

    def _may_step_both(self, body: ast.AST, ctx: FileContext) -> bool:
        """Do the body's calls, nested loops included (the semantic model's shared list, no
        walk of our own), step a discriminator and a generator? Without both, its own-level
        steps (`_steps`) cannot either."""
        found = self._both.get(id(body))
        if found is None:
            roles = {_step_role(c) for c in ctx.body_calls(body) if is_optimizer_step(c)}
            found = self._both[id(body)] = "D" in roles and "G" in roles
        return found

    def _steps(self, body: ast.AST) -> tuple[int, bool]:
        """(the line of the body's last discriminator step, whether it steps a generator)."""
        found = self._step_lines.get(id(body))
        if found is None:
            steps = [c for c in self._nodes(body) if isinstance(c, ast.Call) and is_optimizer_step(c)]
            found = self._step_lines[id(body)] = (
                max((c.lineno for c in steps if _step_role(c) == "D"), default=0),
                any(_step_role(c) == "G" for c in steps))
        return found

    def _nodes(self, body: ast.AST) -> list[ast.AST]:
        found = self._bodies.get(id(body))
        if found is None:
            found = self._bodies[id(body)] = list(own_level(body))
        return found

    def _undetached_fake(self, loss: str, backward: ast.Call, nodes: list[ast.AST], ctx: FileContext
                         ) -> Optional[ast.AST]:
        """The generator output a discriminator call in the loss's expression gets as is."""
        assigns = [n for n in nodes if isinstance(n, (ast.Assign, ast.AugAssign)) and n.lineno < backward.lineno]
        wanted, seen = {loss}, set[str]()
        exprs: list[ast.AST] = []
        while wanted - seen:  # the loss and the names it is computed from, in this body
            name = (wanted - seen).pop()
            seen.add(name)
            for a in assigns:
                targets = a.targets if isinstance(a, ast.Assign) else [a.target]
                if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                    exprs.append(a.value)
                    wanted |= {n.id for n in ast.walk(a.value) if isinstance(n, ast.Name)}
        for expr in exprs:
            for call in (n for n in ast.walk(expr) if isinstance(n, ast.Call)):
                if _func_role(call) != "D" or not call.args:
                    continue
                arg = call.args[0]
                if isinstance(arg, ast.Call) and _func_role(arg) == "G":
                    return arg
                if isinstance(arg, ast.Name) and self._generated(arg, call.lineno, nodes, ctx):
                    return arg
        return None

    def _generated(self, name: ast.Name, lineno: int, nodes: list[ast.AST], ctx: FileContext) -> bool:
        """Is `name` bound, in this body, to a generator call made with gradients on?"""
        binding = ctx.binding_before(name.id, lineno)
        if binding is None or binding.index is not None or not isinstance(binding.node, ast.Assign) \
                or not any(binding.node is n for n in nodes):
            return False
        value = binding.value
        if not (isinstance(value, ast.Call) and _func_role(value) == "G"):
            return False
        for n in nodes:
            if isinstance(n, (ast.With, ast.AsyncWith)) and n.lineno <= binding.node.lineno <= (n.end_lineno or 0) \
                    and any(ctx.call_name(i.context_expr) in _GRAD_OFF for i in n.items):
                return False
        return True
