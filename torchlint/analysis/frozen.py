"""Facts about copies and frozen tensors: what a scope froze (`m.requires_grad_(False)`,
`p.requires_grad = False`, `p.detach_()`, a loop freezing `m.parameters()`) and which names
hold a copy of a model (`deepcopy(model)`, an EMA helper) rather than the trained model.
Computed once per scope, on the first question, and kept in the model's memo."""

from __future__ import annotations

import ast

from torchlint.analysis.astutil import dotted, literal
from torchlint.analysis.scopes import iter_scope
from torchlint.analysis.semantic import SemanticModel

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional
    from torchlint.analysis.scopes import Scope

_COPY_CALLS = frozenset({"copy.deepcopy", "deepcopy"})
_COPY_NAME_PARTS = ("ema", "copy", "shadow", "average", "swa", "teacher", "target")


def _false(node: Optional[ast.AST]) -> bool:
    return node is not None and literal(node) is False


def _freezes(node: ast.AST) -> Optional[str]:
    """The text of what `node` freezes: `x.requires_grad_(False)`, `x.detach_()`,
    `x.requires_grad = False`; None otherwise."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        attr = node.func.attr
        if attr == "detach_" or (attr == "requires_grad_" and (
                _false(node.args[0] if node.args else None)
                or any(k.arg == "requires_grad" and _false(k.value) for k in node.keywords))):
            return dotted(node.func.value)
    if isinstance(node, ast.Assign) and _false(node.value):
        for target in node.targets:
            if isinstance(target, ast.Attribute) and target.attr == "requires_grad":
                return dotted(target.value)
    return None


def parameters_of(iterable: ast.AST) -> Optional[str]:
    """`m` for `m.parameters()` / `m.named_parameters()` (through `enumerate`/`list`)."""
    if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) and iterable.args:
        return parameters_of(iterable.args[0])
    if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Attribute) \
            and iterable.func.attr in ("parameters", "named_parameters"):
        return dotted(iterable.func.value)
    return None


def frozen_lines(model: SemanticModel, scope: Scope) -> dict[str, int]:
    """Text of each frozen tensor or module in `scope` -> the first line that froze it. A
    loop `for p in m.parameters(): p.requires_grad = False` freezes `m`."""
    key = ("frozen", id(scope))
    memo = model.memo.get(key)
    if memo is not None:
        return memo  # type: ignore[return-value]
    found: dict[str, int] = {}
    body: list[ast.stmt] = scope.body if isinstance(scope.body, list) else [ast.Expr(scope.body)]
    for node in iter_scope(body):
        text = _freezes(node)
        if text is not None:
            found.setdefault(text, getattr(node, "lineno", 0))
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            copied = _deepcopy_of(node.value, model)  # a deepcopy keeps requires_grad=False
            if copied is not None and found.get(copied, 10**9) < node.lineno:
                found.setdefault(dotted(node.targets[0]) or "", node.lineno)
        elif isinstance(node, (ast.For, ast.AsyncFor)) and isinstance(node.target, (ast.Name, ast.Tuple)):
            owner = parameters_of(node.iter)
            var = node.target if isinstance(node.target, ast.Name) else node.target.elts[-1]
            if owner is not None and isinstance(var, ast.Name) and any(
                    _freezes(sub) == var.id for sub in iter_scope(node.body)):
                found.setdefault(owner, node.lineno)
    model.memo[key] = found
    return found


def _deepcopy_of(value: ast.AST, model: SemanticModel) -> Optional[str]:
    """The text `m` of `copy.deepcopy(m)` (also `deepcopy(m).to(device)`); None otherwise."""
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
            and value.func.attr in ("to", "cuda", "cpu", "eval"):
        value = value.func.value
    if not (isinstance(value, ast.Call) and value.args):
        return None
    name = model.call_name(value) or (value.func.id if isinstance(value.func, ast.Name) else None)
    return dotted(value.args[0]) if name in _COPY_CALLS else None


def frozen_before(model: SemanticModel, text: str, lineno: int, owner: Optional[str] = None) -> bool:
    """Was `text` (or the module `owner` whose parameters it iterates) frozen above `lineno`
    in the current scope?"""
    lines = frozen_lines(model, model.scope)
    return any(t is not None and lines.get(t, 10**9) < lineno for t in (text, owner))


def is_copy_of_model(model: SemanticModel, node: ast.AST, lineno: int) -> bool:
    """Does `node` (a name or `self.attr`) hold a copy of a model, not the trained one:
    bound from `deepcopy(...)`, or named like an EMA/shadow/teacher/target copy?"""
    leaf = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    lowered = leaf.lower()
    if any(part in lowered for part in _COPY_NAME_PARTS):
        return True
    value: Optional[ast.AST] = node if isinstance(node, ast.Call) else None
    if isinstance(node, ast.Name):
        value = model.value_before(node, lineno, module_fallback=True)
    elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        value = model.self_attribute_value(node.attr)
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
            and value.func.attr in ("to", "cuda", "eval", "requires_grad_", "cpu"):
        value = value.func.value  # `deepcopy(model).to(device).eval()`
    if isinstance(value, ast.Call):
        name = model.call_name(value) or (value.func.id if isinstance(value.func, ast.Name) else None)
        return name in _COPY_CALLS or (name or "").endswith(("ModelEma", "ModelEmaV2", "ModelEmaV3",
                                                             "AveragedModel", "EMA", "ExponentialMovingAverage"))
    return False
