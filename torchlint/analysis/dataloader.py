"""DataLoader facts several rules share: its worker count, and what a loop iterates."""

from __future__ import annotations

import ast

from torchlint.analysis.astutil import arg_or_keyword, dotted, literal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional


def nonzero_workers(call: ast.Call) -> Optional[object]:
    """The `num_workers` value when it is not literally 0 (None when it is 0 or absent)."""
    value = arg_or_keyword(call, 5, "num_workers")
    if value is None:
        return None
    lit = literal(value)
    if lit == 0:
        return None
    return lit if lit is not ... else dotted(value)


def iterated(node: ast.AST) -> Optional[ast.AST]:
    """The iterable of a for loop / comprehension / next(iter(x)), unwrapping enumerate/tqdm."""
    it = None
    if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
        it = node.iter
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("iter", "list") \
            and node.args:
        it = node.args[0]
    while isinstance(it, ast.Call) and isinstance(it.func, (ast.Name, ast.Attribute)) and it.args and \
            (it.func.id if isinstance(it.func, ast.Name) else it.func.attr) in ("enumerate", "tqdm", "zip"):
        it = it.args[0]
    return it
