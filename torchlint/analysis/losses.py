"""Which callables in a file are loss objects: `crit = nn.CrossEntropyLoss()` or
`self.crit = nn.CrossEntropyLoss()`, so that `crit(out, y)` can be recognised."""

from __future__ import annotations

import ast
from typing import Optional

from torchlint.checker import FileContext


def callable_key(func: ast.AST) -> Optional[str]:
    """'crit' for `crit(...)`, 'self.crit' for `self.crit(...)`."""
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
        return "self." + func.attr
    return None


class LossObjects:
    """Collects loss-object assignments during the walk (feed it from visit_Assign);
    calls through them are resolved in end_file, since `self.crit` is often assigned in
    `__init__` after the method that calls it."""

    def __init__(self, classes: frozenset[str]) -> None:
        self.classes = classes
        self.objects: dict[str, str] = {}  # key -> qualified loss class

    def record(self, node: ast.Assign, ctx: FileContext) -> None:
        name = ctx.call_name(node.value)
        if name in self.classes:
            for target in node.targets:
                key = callable_key(target)
                if key:
                    self.objects[key] = name  # type: ignore[assignment]

    def resolve(self, func: ast.AST) -> Optional[str]:
        key = callable_key(func)
        return self.objects.get(key) if key else None
