"""TL102: writes through `.data` that autograd never sees."""

from __future__ import annotations

import ast
from typing import Optional

from torchlint.analysis import inference
from torchlint.checker import FileContext
from torchlint.rules.base import Rule, dotted

_NOT_TENSORS = ("self", "cls")


def _data_receiver(node: ast.AST) -> Optional[ast.Attribute]:
    """The `X.data` node when `node` is `X.data` or `X.data[...]`."""
    if isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Attribute) and node.attr == "data":
        return node
    return None


class DataAttributeMutation(Rule):
    code = "TL102"
    name = "data-attribute-mutation"
    summary = "In-place write through `.data` bypasses autograd"
    severity = "warning"
    tags = ("correctness", "autograd")

    def _message(self, data: ast.Attribute, how: str) -> str:
        owner = dotted(data.value)
        return (
            f"`{dotted(data)}` {how} bypasses autograd: the change is invisible to the graph, so if "
            f"`{owner}` was saved for backward the gradient is silently wrong (the same in-place "
            f"write under `torch.no_grad()` bumps the version counter and raises instead). Use "
            f"`with torch.no_grad(): {owner}.<op>_(...)` or `torch.nn.init.*`"
        )

    def _known_tensor(self, receiver: ast.AST, ctx: FileContext) -> bool:
        return inference.kind_of(receiver, ctx) in (inference.TENSOR, inference.PARAMETER)

    def _check_store(self, target: ast.AST, ctx: FileContext, how: str) -> None:
        data = _data_receiver(target)
        if data is not None and self._known_tensor(data.value, ctx):
            self.report(data, self._message(data, how), params={"op": how})

    def visit_Assign(self, node: ast.Assign, ctx: FileContext) -> None:
        for target in node.targets:
            self._check_store(target, ctx, "assignment")

    def visit_AugAssign(self, node: ast.AugAssign, ctx: FileContext) -> None:
        self._check_store(node.target, ctx, "in-place update")

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        func = node.func
        if not isinstance(func, ast.Attribute):
            return
        method = func.attr
        if not method.endswith("_") or method.startswith("_"):
            return
        data = _data_receiver(func.value)
        if data is None:
            return
        owner = data.value
        if isinstance(owner, ast.Name) and owner.id in _NOT_TENSORS:
            return  # `self.data` is an ordinary attribute, not Tensor.data
        if inference.kind_of(owner, ctx) == inference.MODULE:
            return
        self.report(data, self._message(data, f"`.{method}(...)`"), params={"op": method})
