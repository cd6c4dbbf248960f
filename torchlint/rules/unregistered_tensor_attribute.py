"""TL206: `self.x = torch.zeros(...)` in an nn.Module's __init__."""

from __future__ import annotations

import ast

from torchlint.analysis.inference import TENSOR_FACTORIES
from torchlint.analysis.torch_api import LEGACY_CONSTRUCTORS
from torchlint.checker import FileContext
from torchlint.rules.base import MODULE_BASES_OPTION, Rule


def _handled_elsewhere(cls: ast.ClassDef, attr: str) -> bool:
    """The class moves it itself at every use (`self.bins.to(x.device)`), or another method
    replaces it before use (a setter): either way `.to()` on the module is not needed."""
    reads: list[ast.Attribute] = []
    moved = 0
    for method in cls.body:
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(method):
            if isinstance(node, ast.Attribute) and node.attr == attr and isinstance(node.value, ast.Name) \
                    and node.value.id == "self":
                if isinstance(node.ctx, ast.Store) and method.name != "__init__":
                    return True
                if isinstance(node.ctx, ast.Load):
                    reads.append(node)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("to", "cuda") \
                    and isinstance(node.func.value, ast.Attribute) and node.func.value.attr == attr \
                    and isinstance(node.func.value.value, ast.Name) and node.func.value.value.id == "self":
                moved += 1
    return bool(reads) and moved == len(reads)


class UnregisteredTensorAttribute(Rule):
    code = "TL206"
    name = "unregistered-tensor-attribute"
    summary = "Plain tensor attribute in nn.Module: not moved by .to(), not in state_dict()"
    severity = "warning"
    tags = ("correctness", "device", "module")
    requires_text = ('__init__',)
    options = {"module-bases": MODULE_BASES_OPTION}

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
        args = node.value.args if isinstance(node.value, ast.Call) else []
        if name in ("torch.tensor", "torch.as_tensor") and args \
                and not isinstance(args[0], (ast.List, ast.Tuple, ast.ListComp, ast.Call)):
            return  # maybe a 0-dim scalar (`torch.tensor(cfg.weight)`), which mixes with tensors on any device
        cls = ctx.classes[-1]
        for target in node.targets:
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self" \
                    and not _handled_elsewhere(cls, target.attr):
                self.report(target, f"Plain tensor `self.{target.attr}` is not moved by `.to()` nor saved",
                            help=f"Use `self.register_buffer('{target.attr}', ...)` or `nn.Parameter(...)`")
