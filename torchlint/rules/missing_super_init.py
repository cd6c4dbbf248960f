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
    precision = "very-high"

    def visit_ClassDef(self, node: ast.ClassDef, ctx: FileContext) -> None:
        if not ctx.is_module_class(node):
            return
        methods = {s.name: s for s in node.body if isinstance(s, ast.FunctionDef)}
        # Methods that call the base __init__, so `__init__` may delegate to them.
        initializers = {name for name, fn in methods.items() if name != "__init__" and _calls_base_init(fn)}
        for stmt in node.body:
            if isinstance(stmt, ast.FunctionDef) and stmt.name == "__init__" and not _calls_base_init(stmt) \
                    and not _calls_self_method(stmt, initializers):
                self.report(stmt, f"`{node.name}.__init__` never calls `super().__init__()`: the first "
                                  "submodule or parameter assignment raises `AttributeError: cannot assign "
                                  "module before Module.__init__() call`. Call `super().__init__()` first")
