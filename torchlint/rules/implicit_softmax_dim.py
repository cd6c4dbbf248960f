"""TL403: softmax without an explicit `dim`."""

from __future__ import annotations

import ast

from torchlint.checker import FileContext
from torchlint.rules.base import Rule, arg_or_keyword, has_star_kwargs

_FUNCS = frozenset({"torch.nn.functional.softmax", "torch.nn.functional.log_softmax",
                    "torch.nn.functional.softmin", "torch.softmax", "torch.log_softmax"})
_MODULES = frozenset({"torch.nn.Softmax", "torch.nn.LogSoftmax", "torch.nn.Softmin"})


class ImplicitSoftmaxDim(Rule):
    code = "TL403"
    name = "implicit-softmax-dim"
    summary = "softmax/log_softmax/softmin without dim"
    severity = "warning"
    tags = ("correctness", "deprecated")
    requires_text = ('softmax', 'Softmax', 'softmin', 'Softmin')
    precision = "very-high"

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        name = ctx.call_name(node)
        if has_star_kwargs(node) or any(isinstance(a, ast.Starred) for a in node.args):
            return
        if name in _FUNCS and arg_or_keyword(node, 1, "dim") is None:
            short = name.replace("torch.nn.functional.", "F.")  # type: ignore[union-attr]
            if short.startswith("torch."):
                self.report(node, f"`{short}` without `dim`: torch raises `TypeError: softmax() missing 1 "
                                  "required positional arguments: \"dim\"`. Pass `dim=-1` (or the class dimension)")
                return
            self.report(node, f"`{short}` without `dim`: torch picks the dimension implicitly (deprecated: "
                              "`UserWarning: Implicit dimension choice for softmax has been deprecated`): "
                              "dim 0 for 0-, 1- and 3-D input (across the batch for 3-D), dim 1 otherwise. "
                              "Pass `dim=-1` (or the class dimension)")
        elif name in _MODULES and arg_or_keyword(node, 0, "dim") is None:
            short = name.replace("torch.nn.", "nn.")  # type: ignore[union-attr]
            self.report(node, f"`{short}()` without `dim`: the dimension is chosen implicitly at call time "
                              "(deprecated) and depends on the input's rank. Pass `dim=-1` (or the class "
                              "dimension)")
