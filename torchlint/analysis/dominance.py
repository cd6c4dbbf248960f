"""Does an assignment reach the node being visited on every path? A cheap, structural answer:
the assignment's statement sits in a statement list (a body, an `else`, a `try` block) that
also holds an ancestor of the node. An assignment in the other branch of an `if`, or in an
`if` the node is not inside, does not count: `binding_before` is flow-insensitive (the last
assignment in source order), so rules that trust a value's type check this too."""

from __future__ import annotations

import ast

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional
    from torchlint.analysis.semantic import SemanticModel

_BLOCK_FIELDS = ("body", "orelse", "finalbody")
_STATEMENT_FIELDS = (*_BLOCK_FIELDS, "handlers", "cases")
_Block = tuple[int, str]


def _blocks(model: "SemanticModel") -> dict[int, _Block]:
    """id(statement) -> (id(its parent), the field of the statement list holding it), per file."""
    key = ("dominance-blocks",)
    found = model.memo.get(key)
    if found is None:
        found = model.memo[key] = {}
        _collect(model.tree, found)
    return found  # type: ignore[return-value]


def _collect(node: ast.AST, table: dict[int, _Block]) -> None:
    """Statements only: expressions hold none, and walking them was most of the cost."""
    for name in _STATEMENT_FIELDS:
        value = getattr(node, name, None)
        if type(value) is list:
            for child in value:
                if isinstance(child, ast.stmt):
                    if name in _BLOCK_FIELDS:
                        table[id(child)] = (id(node), name)
                    _collect(child, table)
                elif isinstance(child, (ast.excepthandler, ast.match_case)):
                    _collect(child, table)


def reaches_here(model: "SemanticModel", stmt: ast.AST) -> bool:
    """Is `stmt` (an assignment of this scope) in a statement list that holds an ancestor of the
    node being visited, so that it ran before the node on every path through that list?"""
    blocks = _blocks(model)
    block: Optional[_Block] = blocks.get(id(stmt))
    if block is None:
        return False
    return any(isinstance(a, ast.stmt) and blocks.get(id(a)) == block for a in model.parents)
