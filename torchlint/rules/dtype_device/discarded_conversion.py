"""TL202: a tensor conversion whose result is thrown away."""

from __future__ import annotations

import ast

from torchlint.analysis import inference
from torchlint.checker import FileContext
from torchlint.rules.base import Rule, dotted

_CONVERSIONS = frozenset({"long", "int", "contiguous", "detach", "clone", "pin_memory",
                          "to", "cuda", "cpu", "float", "half", "double", "bfloat16", "type"})


def _methods_defined_here(tree: ast.Module) -> frozenset[str]:
    """Method names that classes of this file define: a user class (an EMA helper, a
    quantised Parameter subclass) whose `.cuda()`/`.pin_memory()` may work in place."""
    return frozenset(stmt.name for cls in tree.body if isinstance(cls, ast.ClassDef)
                     for stmt in cls.body if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)))

class DiscardedConversion(Rule):
    code = "TL202"
    name = "discarded-conversion"
    summary = "Tensor conversion result discarded (tensor conversions are not in place)"
    severity = "error"
    tags = ("correctness", "dtype", "device")

    def visit_Expr(self, node: ast.Expr, ctx: FileContext) -> None:
        call = node.value
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
            return
        method = call.func.attr
        receiver = call.func.value
        if method not in _CONVERSIONS:
            return
        if isinstance(receiver, ast.Name) and receiver.id in ("self", "cls", "super"):
            return
        if method == "detach" and call.args:
            return
        # Only values known to be tensors: nn.Module and many user objects (EMA helpers,
        # Parameter subclasses) convert in place, so an unknown receiver says nothing.
        if inference.kind_of(receiver, ctx) not in (inference.TENSOR, inference.PARAMETER):
            return
        key = ("methods-defined",)
        defined = ctx.memo.get(key)
        if defined is None:
            defined = ctx.memo[key] = _methods_defined_here(ctx.tree)
        if method in defined:  # type: ignore[operator]
            return
        if method == "type" and not call.args:
            return  # x.type() returns the type string; not a conversion
        target = dotted(receiver)
        self.report(node, f"`{dotted(call)}` result is discarded: tensor conversions are not in place",
                    help=f"Assign it: `{target} = {dotted(call)}`", params={"method": method})
