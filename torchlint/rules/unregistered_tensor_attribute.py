"""TL206: `self.x = torch.zeros(...)` in an nn.Module's __init__."""

from __future__ import annotations

import ast

from torchlint.analysis.inference import TENSOR_FACTORIES
from torchlint.analysis.torch_api import LEGACY_CONSTRUCTORS
from torchlint.checker import FileContext
from torchlint.rules.base import Rule


class UnregisteredTensorAttribute(Rule):
    code = "TL206"
    name = "unregistered-tensor-attribute"
    summary = "Plain tensor attribute in nn.Module: not moved by .to(), not in state_dict()"
    severity = "warning"
    tags = ("correctness", "device", "module")
    requires_text = ('__init__',)

    def visit_Assign(self, node: ast.Assign, ctx: FileContext) -> None:
        fn = ctx.function
        if not isinstance(fn, ast.FunctionDef) or fn.name != "__init__" or len(ctx.functions) != 1:
            return
        if ctx.enclosing_module_class() is None:
            return
        name = ctx.call_name(node.value)
        if name is None or not name.startswith("torch.") or name.count(".") != 1:
            return
        if name.rsplit(".", 1)[1] not in TENSOR_FACTORIES or name in LEGACY_CONSTRUCTORS:
            return
        for target in node.targets:
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                self.report(target, f"Plain tensor `self.{target.attr}` is not moved by `.to()` nor saved",
                            help=f"Use `self.register_buffer('{target.attr}', ...)` or `nn.Parameter(...)`")
