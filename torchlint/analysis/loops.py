"""What a loop body (or any statement list) does: backward, optimizer steps, zero_grad."""

from __future__ import annotations

import ast

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional
    from torchlint.analysis.semantic import SemanticModel


def method_name(call: ast.Call) -> Optional[str]:
    return call.func.attr if isinstance(call.func, ast.Attribute) else None


def is_backward(call: ast.Call, ctx: "SemanticModel") -> bool:
    """`loss.backward()`, `accelerator.backward(loss)`, `torch.autograd.backward(...)`."""
    if isinstance(call.func, ast.Attribute) and call.func.attr == "backward":
        return True
    return ctx.call_name(call) == "torch.autograd.backward"


def receiver_name(call: ast.Call) -> str:
    """Last identifier of the receiver: 'optimizer' for `self.optimizer.step()`."""
    if not isinstance(call.func, ast.Attribute):
        return ""
    value = call.func.value
    if isinstance(value, ast.Name):
        return value.id
    if isinstance(value, ast.Attribute):
        return value.attr
    return ""


def is_optimizer_step(call: ast.Call) -> bool:
    """`opt.step()`, `self.optimizer.step()`, `scaler.step(optimizer)`; not a scheduler's step."""
    if method_name(call) != "step":
        return False
    name = receiver_name(call).lower()
    if "sched" in name or name.startswith("lr"):
        return False
    return "opt" in name or ("scaler" in name and bool(call.args))


def is_zero_grad(node: ast.AST) -> bool:
    """`x.zero_grad()`, `p.grad = None`, `p.grad.zero_()` (also `p.grad.data.zero_()`),
    `p.grad.fill_(0)`, `p.grad.detach_()`."""
    if isinstance(node, ast.Call):
        name = method_name(node)
        if name == "zero_grad":
            return True
        receiver = node.func.value if isinstance(node.func, ast.Attribute) else None
        if isinstance(receiver, ast.Attribute) and receiver.attr == "data":  # `p.grad.data.zero_()`
            receiver = receiver.value
        if name in ("zero_", "detach_") and isinstance(receiver, ast.Attribute) and receiver.attr == "grad":
            return True
        if name == "fill_" and isinstance(receiver, ast.Attribute) and receiver.attr == "grad" and node.args \
                and isinstance(node.args[0], ast.Constant) and node.args[0].value == 0:
            return True
    if isinstance(node, ast.Assign):
        return any(isinstance(t, ast.Attribute) and t.attr == "grad" for t in node.targets)
    return False


def _reads_grad(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr == "grad" for n in ast.walk(node))


def is_manual_update(node: ast.AST) -> bool:
    """A hand-written SGD step: `w -= lr * w.grad`, `p.data.add_(p.grad, alpha=-lr)`,
    `p.sub_(lr * p.grad)`: a parameter moved by its gradient without an optimizer."""
    if isinstance(node, ast.AugAssign):
        return isinstance(node.op, (ast.Sub, ast.Add)) and _reads_grad(node.value)
    if isinstance(node, ast.Call) and method_name(node) in ("sub_", "add_"):
        return any(_reads_grad(a) for a in [*node.args, *(k.value for k in node.keywords)])
    return False
