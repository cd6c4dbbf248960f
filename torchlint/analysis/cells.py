"""Notebook cells: IPython displays the value of a cell's last top-level expression, so a
conversion written there (`x.float()` to look at it) is shown, not thrown away."""

from __future__ import annotations

import ast
from bisect import bisect_right


def is_displayed_cell_result(tree: ast.Module, cell_starts: tuple[int, ...], node: ast.stmt) -> bool:
    """Is `node` the last top-level statement of its notebook cell (and an expression)?
    `cell_starts`: the first program row of each code cell, in order; empty for a .py file."""
    if not cell_starts or not isinstance(node, ast.Expr):
        return False
    body = tree.body
    for i, stmt in enumerate(body):
        if stmt is node:
            break
    else:
        return False  # not at the top level: a cell shows only its last top-level value
    cell = bisect_right(cell_starts, node.lineno)
    next_start = cell_starts[cell] if cell < len(cell_starts) else None
    following = body[i + 1] if i + 1 < len(body) else None
    return following is None or (next_start is not None and following.lineno >= next_start)
