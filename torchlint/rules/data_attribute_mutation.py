"""TL102: writes through `.data` that autograd never sees."""

from __future__ import annotations

import ast
from typing import Optional

from torchlint.analysis import inference
from torchlint.checker import FileContext
from torchlint.rules.base import Option, Rule, dotted

_NOT_TENSORS = ("self", "cls")
# Weight set-up code (initialisation, checkpoint conversion and loading, deploy-time fusion)
# runs before any autograd graph exists, so `.data` writes there cannot corrupt a gradient.
_SETUP_NAME_PARTS = ("init", "reset_parameters", "convert", "load", "fuse")
_AUG_OPS = {ast.Add: "+=", ast.Sub: "-=", ast.Mult: "*=", ast.Div: "/=", ast.Pow: "**=",
            ast.FloorDiv: "//=", ast.Mod: "%=", ast.BitAnd: "&=", ast.BitOr: "|=", ast.MatMult: "@="}


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
    requires_text = ('.data',)
    options = {
        "skip-initializers": Option(
            bool, True,
            "Stay silent inside weight set-up functions (names containing `init`, `reset_parameters`, "
            "`convert`, `load`, `fuse`): no autograd graph exists when they run."),
    }

    def _in_initializer(self, ctx: FileContext) -> bool:
        if not self.settings["skip-initializers"]:
            return False
        for fn in ctx.functions:
            name = getattr(fn, "name", "").lower()
            if any(part in name for part in _SETUP_NAME_PARTS):
                return True
        return False

    def _message(self, data: ast.Attribute, write: str) -> str:
        owner = dotted(data.value)
        return (
            f"`{write}` writes through `.data`, which autograd does not track: if `{owner}` was "
            "saved for backward, the gradient is silently wrong (the same in-place write under "
            "`torch.no_grad()` bumps the version counter, so torch raises instead). Use "
            f"`with torch.no_grad(): {owner}.<op>_(...)` or `torch.nn.init.*`"
        )

    def _known_tensor(self, receiver: ast.AST, ctx: FileContext) -> bool:
        return inference.kind_of(receiver, ctx) in (inference.TENSOR, inference.PARAMETER)

    def _check_store(self, target: ast.AST, ctx: FileContext, op: str) -> None:
        data = _data_receiver(target)
        if data is not None and self._known_tensor(data.value, ctx) and not self._in_initializer(ctx):
            self.report(data, self._message(data, f"{dotted(target)} {op} ..."), params={"op": op})

    def visit_Assign(self, node: ast.Assign, ctx: FileContext) -> None:
        for target in node.targets:
            self._check_store(target, ctx, "=")

    def visit_AugAssign(self, node: ast.AugAssign, ctx: FileContext) -> None:
        op = _AUG_OPS.get(type(node.op), "op=")
        self._check_store(node.target, ctx, op)

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
        if inference.kind_of(owner, ctx) == inference.MODULE or self._in_initializer(ctx):
            return
        self.report(data, self._message(data, f"{dotted(data)}.{method}(...)"), params={"op": method})
