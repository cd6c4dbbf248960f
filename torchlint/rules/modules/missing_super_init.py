"""TL702: an nn.Module subclass whose __init__ never calls super().__init__()."""

from __future__ import annotations

import ast

from torchlint.checker import FileContext
from torchlint.rules.base import MODULE_BASES_OPTION, Rule


def _calls_base_init(fn: ast.FunctionDef) -> bool:
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "__init__":
            return True  # super().__init__(), super(C, self).__init__(), Base.__init__(self)
    return False


def _calls_self_method(fn: ast.FunctionDef, names: set[str]) -> bool:
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in names \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "self":
            return True
    return False


class MissingSuperInit(Rule):
    code = "TL702"
    name = "missing-super-init"
    summary = "nn.Module subclass __init__ does not call super().__init__()"
    severity = "error"
    tags = ("correctness", "module")
    requires_text = ('__init__',)
    options = {"module-bases": MODULE_BASES_OPTION}
    precision = "very-high"

    def visit_ClassDef(self, node: ast.ClassDef, ctx: FileContext) -> None:
        # A stub (.pyi) declares `__init__`'s signature; it has no body to call anything.
        if ctx.source.path.lower().endswith(".pyi") or not ctx.is_module_class(node):
            return
        init = next((s for s in node.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)
        if init is None or _calls_base_init(init):
            return
        # `__init__` may delegate to a method that calls the base __init__.
        initializers = {s.name for s in node.body if isinstance(s, ast.FunctionDef) and s is not init
                        and _calls_base_init(s)}
        if _calls_self_method(init, initializers):
            return
        self.report(init, f"`{node.name}.__init__` never calls `super().__init__()`",
                    help="Call `super().__init__()` first")
