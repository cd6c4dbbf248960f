"""Which calls are loss calls: functional (`F.cross_entropy(...)`), or through loss objects
bound in the calling scope (`crit = nn.CrossEntropyLoss(); crit(out, y)`) or on the calling
class (`self.crit = nn.CrossEntropyLoss()` ... `self.crit(out, y)`)."""

from __future__ import annotations

import ast

from torchlint.analysis.imports import QualNames
from torchlint.analysis.semantic import SemanticModel

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional


class LossCalls:
    """Feed `record` from the rule's visit_Assign. Calls are matched in source order: a
    loss object must be assigned before (above) the call that uses it, which is how
    training code is written; this keeps unrelated calls from costing a scope analysis."""

    def __init__(self, classes: frozenset[str], functions: frozenset[str]) -> None:
        self.classes = QualNames(classes)
        self.functions = QualNames(functions)
        self._local_names: set[str] = set()  # names ever bound to a loss object
        self._attributes: dict[tuple[int, str], str] = {}  # (id(class), attr) -> loss class

    def record(self, node: ast.Assign, ctx: SemanticModel) -> None:
        name = ctx.call_among(node.value, self.classes)
        if name is None:
            return
        for target in node.targets:
            if isinstance(target, ast.Name):
                self._local_names.add(target.id)
            elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                    and target.value.id == "self" and ctx.classes:
                self._attributes[(id(ctx.classes[-1]), target.attr)] = name  # type: ignore[assignment]

    def match(self, node: ast.Call, ctx: SemanticModel) -> Optional[str]:
        """The qualified loss (class or function) that `node` calls, or None."""
        func = node.func
        if isinstance(func, ast.Name):
            if func.id in self._local_names:
                return self._resolve_local(func.id, node.lineno, ctx)
        elif isinstance(func, ast.Attribute):
            if isinstance(func.value, ast.Name) and func.value.id == "self":
                return self._attributes.get((id(ctx.classes[-1]), func.attr)) if ctx.classes else None
        return ctx.call_among(node, self.functions)

    def _resolve_local(self, name: str, lineno: int, ctx: SemanticModel) -> Optional[str]:
        # The same name is often a different loss in another function: use this scope's binding.
        binding = ctx.binding_before(name, lineno, module_fallback=True)
        if binding is None or binding.index is not None or binding.value is None:
            return None
        return ctx.call_among(binding.value, self.classes)
