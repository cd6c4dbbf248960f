"""Which callables are loss objects: `crit = nn.CrossEntropyLoss()` in the calling scope, or
`self.crit = nn.CrossEntropyLoss()` in the calling class, so `crit(out, y)` is recognised."""

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
    """Resolves a call's callee to a loss class. Local names are looked up in the calling
    scope at the call (the same name is often a different loss in another function);
    `self.<attr>` is collected per class during the walk (feed `record` from visit_Assign)
    and resolved in end_file, since `__init__` may come after the method that calls it."""

    def __init__(self, classes: frozenset[str]) -> None:
        self.classes = classes
        self.attributes: dict[tuple[int, str], str] = {}  # (id(class), attr) -> loss class

    def record(self, node: ast.Assign, ctx: FileContext) -> None:
        if not ctx.classes:
            return
        name = ctx.call_name(node.value)
        if name in self.classes:
            for target in node.targets:
                key = callable_key(target)
                if key and key.startswith("self."):
                    self.attributes[(id(ctx.classes[-1]), key)] = name  # type: ignore[assignment]

    def resolve_local(self, func: ast.AST, lineno: int, ctx: FileContext) -> Optional[str]:
        """The loss class of a plain-name callee, from its binding in the current scope
        (or at module level); None when unknown here."""
        if not isinstance(func, ast.Name):
            return None
        binding = ctx.assignments().last_before(func.id, lineno)
        if binding is None and ctx.scope is not ctx.tree:
            binding = ctx.assignments(ctx.tree).last_before(func.id, 10**9)
        if binding is None or binding.index is not None or binding.value is None:
            return None
        name = ctx.call_name(binding.value)
        return name if name in self.classes else None

    def attribute_key(self, func: ast.AST, ctx: FileContext) -> Optional[tuple[int, str]]:
        key = callable_key(func)
        if key is None or not key.startswith("self.") or not ctx.classes:
            return None
        return id(ctx.classes[-1]), key

    def resolve_attribute(self, key: tuple[int, str]) -> Optional[str]:
        return self.attributes.get(key)


class LossCalls(LossObjects):
    """Finds calls of given losses, functional (`F.cross_entropy(...)`) or through loss
    objects (`crit(...)`, `self.crit(...)`). `match` answers at once when it can and
    remembers `self.<attr>` calls with a payload until `deferred()` can resolve them."""

    def __init__(self, classes: frozenset[str], functions: frozenset[str]) -> None:
        super().__init__(classes)
        self.functions = functions
        self._pending: list[tuple[tuple[int, str], object]] = []

    def may_be_loss(self, node: ast.Call, ctx: FileContext) -> bool:
        return ctx.call_name(node) in self.functions or callable_key(node.func) is not None

    def match(self, node: ast.Call, ctx: FileContext, payload: object) -> Optional[str]:
        name = ctx.call_name(node)
        if name in self.functions:
            return name
        local = self.resolve_local(node.func, node.lineno, ctx)
        if local is not None:
            return local
        key = self.attribute_key(node.func, ctx)
        if key is not None:
            self._pending.append((key, payload))
        return None

    def deferred(self) -> list[tuple[str, object]]:
        found = []
        for key, payload in self._pending:
            loss = self.resolve_attribute(key)
            if loss is not None:
                found.append((loss, payload))
        return found
