"""Grad mode inherited from callers: a same-file function every one of whose call sites sits
in a grad-disabled region (`@torch.no_grad()` on the caller, `with torch.no_grad():` around
the call) runs with grad disabled too, so an in-place update of a leaf there cannot raise.
Built once per file, on the first question, and kept in the model's memo."""

from __future__ import annotations

import ast

from torchlint.analysis.nodes import iter_children
from torchlint.analysis.scopes import FUNCTION_TYPES, grad_mode_of
from torchlint.analysis.semantic import SemanticModel

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional


def _mode(exprs: list[ast.expr], model: SemanticModel) -> Optional[bool]:
    """True/False when one of `exprs` disables/enables grad; None when none sets it."""
    found: Optional[bool] = None
    for expr in exprs:
        mode = grad_mode_of(expr, model.imports)
        if mode is not None:
            found = mode[0]
    return found


def _call_sites(model: SemanticModel) -> dict[str, list[bool]]:
    """Module-level function name -> for each call `name(...)` in the file, is grad disabled there?"""
    names = {s.name for s in model.tree.body if isinstance(s, FUNCTION_TYPES)}
    sites: dict[str, list[bool]] = {}
    stack: list[tuple[ast.AST, bool]] = [(model.tree, False)]
    while stack:
        node, disabled = stack.pop()
        if isinstance(node, FUNCTION_TYPES):
            mode = _mode(node.decorator_list, model)
            disabled = bool(mode)  # a def runs where it is called, not where it is written
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            mode = _mode([item.context_expr for item in node.items], model)
            disabled = disabled if mode is None else mode
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names:
            sites.setdefault(node.func.id, []).append(disabled)
        stack.extend((child, disabled) for child in iter_children(node))
    return sites


def called_only_without_grad(model: SemanticModel, fn: Optional[ast.AST]) -> bool:
    """Is `fn` a module-level function called in this file, and only where grad is disabled?"""
    if not isinstance(fn, FUNCTION_TYPES) or fn not in model.tree.body:
        return False
    key = ("grad_callers",)
    sites = model.memo.get(key)
    if not isinstance(sites, dict):
        sites = model.memo[key] = _call_sites(model)
    found: list[bool] = sites.get(fn.name, [])
    return bool(found) and all(found)
