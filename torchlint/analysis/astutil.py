"""Small AST helpers shared by rules and analyses: call arguments, literals, source text."""

from __future__ import annotations

import ast
from typing import Any, Optional


def dotted(node: ast.AST) -> str:
    """Source-like text for short expressions used in messages (`self.rng`, `p.data`)."""
    try:
        text = ast.unparse(node)
    except Exception:  # pragma: no cover - unparse handles every node ast.parse makes
        return "<expr>"
    return text if len(text) <= 60 else text[:57] + "..."


def keyword(call: ast.Call, name: str) -> Optional[ast.keyword]:
    for kw in call.keywords:
        if kw.arg == name:
            return kw
    return None


def has_star_kwargs(call: ast.Call) -> bool:
    return any(kw.arg is None for kw in call.keywords)


def arg_or_keyword(call: ast.Call, index: int, name: str) -> Optional[ast.AST]:
    kw = keyword(call, name)
    if kw is not None:
        return kw.value
    if len(call.args) > index and not any(isinstance(a, ast.Starred) for a in call.args[: index + 1]):
        return call.args[index]
    return None


def literal(node: Optional[ast.AST]) -> Any:
    """The Python value of a literal node; `...` (Ellipsis) when it is not a literal."""
    if node is None:
        return ...
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return ...
