"""TL702: an nn.Module subclass whose __init__ never calls super().__init__()."""

from __future__ import annotations

import ast

from torchlint.checker import FileContext
from torchlint.rules.base import Rule


def _calls_base_init(fn: ast.FunctionDef) -> bool:
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "__init__":
            return True  # super().__init__(), super(C, self).__init__(), Base.__init__(self)
    return False


class MissingSuperInit(Rule):
    code = "TL702"
    name = "missing-super-init"
    summary = "nn.Module subclass __init__ does not call super().__init__()"
    severity = "error"
    tags = ("correctness", "module")
    precision = "very-high"

    def visit_ClassDef(self, node: ast.ClassDef, ctx: FileContext) -> None:
        if not ctx.is_module_class(node):
            return
        for stmt in node.body:
            if isinstance(stmt, ast.FunctionDef) and stmt.name == "__init__" and not _calls_base_init(stmt):
                self.report(stmt, f"`{node.name}.__init__` never calls `super().__init__()`: the first "
                                  "submodule or parameter assignment raises `AttributeError: cannot assign "
                                  "module before Module.__init__() call`. Call `super().__init__()` first")
