"""What a loop body (or any statement list) does: backward, optimizer steps, zero_grad."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
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
    """`x.zero_grad()`, `p.grad = None`, `p.grad.zero_()`, `p.grad.detach_()`."""
    if isinstance(node, ast.Call):
        name = method_name(node)
        if name == "zero_grad":
            return True
        receiver = node.func.value if isinstance(node.func, ast.Attribute) else None
        if name in ("zero_", "detach_") and isinstance(receiver, ast.Attribute) and receiver.attr == "grad":
            return True
    if isinstance(node, ast.Assign):
        return any(isinstance(t, ast.Attribute) and t.attr == "grad" for t in node.targets)
    return False



