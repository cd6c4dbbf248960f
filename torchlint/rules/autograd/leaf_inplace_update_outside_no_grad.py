"""TL105: in-place update of a leaf tensor that requires grad, outside no_grad."""

from __future__ import annotations

import ast

from torchlint.analysis import inference
from torchlint.analysis.frozen import frozen_before, parameters_of
from torchlint.analysis.grad_callers import called_only_without_grad
from torchlint.analysis.scopes import Binding
from torchlint.checker import FileContext
from torchlint.rules.base import Evidence, Rule, Violation, dotted, keyword, literal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional

# In-place methods that do not modify the tensor's values.
_NOT_VALUE_WRITES = frozenset({"requires_grad_", "retain_grad", "share_memory_", "detach_", "record_stream"})


# -- evidence (runs only in the --verify worker: see CONTRIBUTING.md) ----------------------
def probe_leaf_inplace(params: dict, device: str) -> tuple[str, str]:
    import torch
    from _evidence import first_line, raises

    w = torch.randn(3, device=device, requires_grad=True)
    exc = raises(lambda: w.sub_(0.1))  # noqa: TL105 - the hazard, on purpose
    if exc is not None and "leaf Variable" in str(exc):
        return "confirmed", first_line(exc)
    return "not-reproduced", f"in-place update of a leaf did not raise ({exc!r})"


def judge_leaf_inplace(facts: dict, runs: list) -> Optional[tuple[str, str]]:
    from _evidence import expect_raise, says

    return expect_raise(runs, says("leaf Variable"), "the in-place update", lambda rec: "the in-place update ran")


class InplaceLeafUpdate(Violation):
    leaf: str
    update: str  # `w -= ...`, `w.add_(...)`
    help = "Wrap the update in `with torch.no_grad():`"

    def message(self) -> str:
        return f"`{self.update}` raises: in-place update of leaf `{self.leaf}`, which requires grad"


class LeafInplaceUpdateOutsideNoGrad(Rule):
    """On the 2026-12 held-out corpus (54 projects, independent triage), 0 of 2 findings were true;
    off by default. Enable it with `--extend-select TL105`.

    ## What it does
    Flags an in-place update (`w -= lr * w.grad`, `w.sub_(...)`, `w.add_(...)`, `w.copy_(...)`, any
    in-place method) of a leaf tensor that requires grad, outside a grad-disabled region, where `w`
    was created with `requires_grad=True`, is an `nn.Parameter`, or is a loop variable over
    `.parameters()`.

    It stays silent when the leaf was frozen above the update in the same function:
    `module.requires_grad_(False)` (for `for p in module.parameters(): p.add_(...)`),
    `p.requires_grad = False`, `p.requires_grad_(False)`, `p.detach_()`, or a loop
    `for q in m.parameters(): q.requires_grad = False` before the update. A later
    `requires_grad_(True)` that unfreezes it again is not tracked (the rule stays silent). A
    `copy.deepcopy` of a module frozen above is frozen too (the copy keeps `requires_grad=False`).
    A function of the file that is called only where grad is disabled (every call under
    `with torch.no_grad():` or from a `@torch.no_grad()` function, as an EMA or momentum
    update called after `optimizer.step()`) runs with grad disabled, so it is silent there.

    ## Why is this bad?
    torch refuses to modify a leaf that requires grad while autograd is recording:

    ```
    RuntimeError: a leaf Variable that requires grad is being used in an in-place operation.
    ```

    Manual SGD written from a tutorial hits this at the first update. The update must run under
    `torch.no_grad()` (which is what every `torch.optim` optimizer does).

    ## Example
    ```python
    w = torch.randn(3, requires_grad=True)
    loss.backward()
    w -= lr * w.grad
    ```

    ## Use instead
    ```python
    with torch.no_grad():
        w -= lr * w.grad
    w.grad = None
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [Autograd mechanics](https://pytorch.org/docs/stable/notes/autograd.html)
    - [torch.no_grad](https://pytorch.org/docs/stable/generated/torch.no_grad.html)
    """

    code = "TL105"
    name = "leaf-inplace-update-outside-no-grad"
    summary = "In-place update of a leaf that requires grad outside torch.no_grad()"
    severity = "error"
    default_enabled = False
    tags = ("correctness", "autograd")
    requires_text = ('requires_grad', 'Parameter', 'parameters')
    evidence = Evidence(generic_probe=True, probe=probe_leaf_inplace, slice="leaf-inplace", judge=judge_leaf_inplace,
                        crash=r"leaf Variable that requires grad is being used in an in-place operation")

    def _requires_grad_leaf(self, node: ast.AST, ctx: FileContext) -> bool:
        if not isinstance(node, ast.Name):
            return False
        # `w -= ...` rebinds the name to the same tensor: look through augmented assignments.
        binding = ctx.binding_before(node.id, node.lineno, through_augmented=True)
        if binding is None or not self._binding_is_leaf(binding, ctx):
            return False
        # Frozen just before (`model.requires_grad_(False)`, `p.requires_grad = False`,
        # `p.detach_()`): the leaf no longer requires grad, and the update is allowed.
        owner = parameters_of(binding.node.iter) if isinstance(binding.node, (ast.For, ast.AsyncFor)) else None
        return not frozen_before(ctx, node.id, node.lineno, owner)

    def _binding_is_leaf(self, b: Binding, ctx: FileContext) -> bool:
        if isinstance(b.node, (ast.For, ast.AsyncFor)):
            return inference.binding_kind(b, ctx) == inference.PARAMETER
        value: Optional[ast.AST] = b.value
        if not isinstance(value, ast.Call) or b.index is not None:
            return False
        name = ctx.call_name(value)
        if name == "torch.nn.Parameter":
            rg = keyword(value, "requires_grad")
            return rg is None or literal(rg.value) is True
        if name is not None and name.startswith("torch."):
            rg = keyword(value, "requires_grad")
            return rg is not None and literal(rg.value) is True
        # torch.zeros(3).requires_grad_()
        return isinstance(value.func, ast.Attribute) and value.func.attr == "requires_grad_" \
            and not value.args and inference.kind_of(value.func.value, ctx) == inference.TENSOR

    def visit_AugAssign(self, node: ast.AugAssign, ctx: FileContext) -> None:
        if not _grad_disabled(ctx) and self._requires_grad_leaf(node.target, ctx):
            name = dotted(node.target)
            self.report(node, InplaceLeafUpdate(leaf=name, update=f"{name} {_op(node.op)}= ..."))

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        func = node.func
        if not isinstance(func, ast.Attribute) or not func.attr.endswith("_") or func.attr.startswith("_"):
            return
        if func.attr in _NOT_VALUE_WRITES or _grad_disabled(ctx):
            return
        if self._requires_grad_leaf(func.value, ctx):
            name = func.value.id  # type: ignore[attr-defined]
            self.report(node, InplaceLeafUpdate(leaf=name, update=f"{name}.{func.attr}(...)"))


def _grad_disabled(ctx: FileContext) -> bool:
    """Grad is off here: a no_grad region, or a function only ever called from one."""
    return ctx.grad_disabled() or called_only_without_grad(ctx, ctx.function)


def _op(op: ast.operator) -> str:
    return {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}.get(type(op), "op")
