"""Fast child iteration for ast nodes: only the fields that can hold nodes, computed once
per node type (ast.iter_child_nodes inspects every field of every node)."""

from __future__ import annotations

import ast

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterator

# Fields that never hold nodes a rule cares about: names, flags, positions, expression
# contexts and operators.
_PRIMITIVE_FIELDS = frozenset({
    "ctx", "op", "ops", "type_comment", "kind", "id", "attr", "name", "arg", "module", "level",
    "conversion", "is_async", "simple", "asname", "lineno", "col_offset", "end_lineno",
    "end_col_offset", "n", "s", "tag",
})
LEAF_TYPES = frozenset({ast.Name, ast.Constant, ast.alias, ast.Pass, ast.Break, ast.Continue,
                         ast.Global, ast.Nonlocal})
_FIELDS: dict[type, tuple[str, ...]] = {}


def node_fields(cls: type) -> tuple[str, ...]:
    fields = _FIELDS.get(cls)
    if fields is None:
        fields = () if cls in LEAF_TYPES else tuple(f for f in getattr(cls, "_fields", ()) if f not in _PRIMITIVE_FIELDS)
        _FIELDS[cls] = fields
    return fields


def iter_children(node: ast.AST) -> Iterator[ast.AST]:
    """The node's children in field order (`child_list`, iterated)."""
    return iter(child_list(node))


def child_list(node: ast.AST) -> list[ast.AST]:
    """The node's children in field order, as a list built without a generator: for walks
    that push a node's children onto a stack (a generator per node was most of their cost)."""
    children: list[ast.AST] = []
    fields = _FIELDS.get(type(node))
    if fields is None:
        fields = node_fields(type(node))
    for field in fields:
        value = getattr(node, field, None)
        if type(value) is list:
            for item in value:
                if isinstance(item, ast.AST):
                    children.append(item)
        elif isinstance(value, ast.AST):
            children.append(value)
    return children


# Where statements can be: statements hold them in these lists (match cases and except
# handlers hold bodies of their own); expressions never hold a statement.
STATEMENT_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")
_STATEMENT_FIELDS_OF: dict[type, tuple[str, ...]] = {}


def statement_fields(cls: type) -> tuple[str, ...]:
    """The fields of a node type that hold statements, in the type's field order (a try's
    handlers before its else), computed once per type."""
    fields = _STATEMENT_FIELDS_OF.get(cls)
    if fields is None:
        fields = _STATEMENT_FIELDS_OF[cls] = tuple(f for f in getattr(cls, "_fields", ()) if f in STATEMENT_FIELDS)
    return fields


def iter_statements(node: ast.AST) -> Iterator[ast.AST]:
    """Every statement under `node` (nested functions and classes included), in no set
    order, without descending into expressions: most of a tree's nodes, which cannot hold
    a statement. `ExceptHandler` and `match_case` are yielded as they are passed through."""
    stack = [node]
    pop, extend = stack.pop, stack.extend
    while stack:
        current = pop()
        for field in statement_fields(type(current)):
            items = getattr(current, field)
            yield from items
            extend(items)
