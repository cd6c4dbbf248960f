"""What a file's names mean in the rest of the project: the semantic model's questions that
go to the project index (`torchlint.analysis.project_index`). A mixin of SemanticModel,
kept apart so the model itself stays about one file."""

from __future__ import annotations

import ast

from torchlint.analysis.frameworks import is_framework_factory, is_framework_module
from torchlint.analysis.imports import is_module_class_name, qualify
from torchlint.analysis.project_index import ModuleInfo, ProjectIndex
from torchlint.analysis.scopes import iter_scope

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional, Union
    _FunctionNode = Union[ast.FunctionDef, ast.AsyncFunctionDef]


class CrossFile:
    """The index-facing half of SemanticModel (see there for the attributes it reads)."""

    index: Optional[ProjectIndex]
    tree: ast.Module
    scopes: list[Any]  # semantic.ScopeInfo
    extra_module_bases: frozenset[str]
    _relative: Optional[dict[str, str]]
    _module_classes: dict[str, ast.ClassDef]
    memo: dict[tuple, object]

    if TYPE_CHECKING:
        def qualname(self, node: ast.AST) -> Optional[str]: ...

        def called_function(self, call: ast.Call) -> Optional[_FunctionNode]: ...

        def is_module_class_name(self, name: str, depth: int = 0) -> bool: ...

        def sole_value(self, name: str, scope: Any) -> Optional[ast.AST]: ...

    def imported_function(self, call: ast.Call) -> Optional[tuple[ModuleInfo, _FunctionNode]]:
        """(its module, the def) when `call` runs a function of another file of the project
        (`train_one_epoch(...)` imported from `engine`, `engine.train_one_epoch(...)`)."""
        if self.index is None or not isinstance(call.func, (ast.Name, ast.Attribute)):
            return None
        qn = self.project_qualname(call.func)
        return self.index.function_def(qn) if qn is not None else None

    def project_qualname(self, node: ast.AST) -> Optional[str]:
        """`qualname`, with the file's relative imports resolved (`from .models import Net`
        -> `pkg.models.Net`); only the index asks for those."""
        found = self.qualname(node)
        if found is not None or self.index is None:
            return found
        base = node
        while isinstance(base, ast.Attribute):
            base = base.value
        if not isinstance(base, ast.Name) or self.scopes_bind(base.id):
            return None
        return self.relative_qualname(node)

    def relative_qualname(self, node: ast.AST) -> Optional[str]:
        """What `node` names through the file's relative imports alone."""
        if self.index is None:
            return None
        if self._relative is None:
            self._relative = self.index.relative_aliases(self.tree)
        return qualify(node, self._relative.get) if self._relative else None

    def is_module_base(self, qualname: str) -> bool:
        """Is `qualname` a class whose subclasses are nn.Modules: torch.nn, the framework
        table, `module-bases`, or a class of another project file deriving from one?"""
        if is_module_class_name(qualname) or is_framework_module(qualname, self.extra_module_bases):
            return True
        return self.index is not None and self.index.is_module_class(qualname, self._known_module_base)

    def _known_module_base(self, qualname: str) -> bool:
        return is_module_class_name(qualname) or is_framework_module(qualname, self.extra_module_bases)

    def builds_module(self, call: ast.Call, follow: bool = True) -> bool:
        """Does `call` return an nn.Module: a class of this or another project file deriving
        from one, a torchvision/timm factory, or (with `follow`) a function of the project
        whose every `return` builds one (`build_model(cfg)`)?"""
        func = call.func
        if isinstance(func, ast.Name) and func.id in self._module_classes and not self.scopes_bind(func.id):
            return self.is_module_class_name(func.id)
        qn = self.project_qualname(func)
        if qn is not None and (is_framework_factory(qn) or self.is_module_base(qn)):
            return True
        if not follow:
            return False
        fn = self.called_function(call)
        if fn is None:
            return False
        key = ("returns-module", id(fn))  # asked for every call of it: its body is read once
        found = self.memo.get(key)
        if found is None:
            found = self.memo[key] = _returns_module(fn, self, self.called_module(call, fn))
        return bool(found)

    def called_module(self, call: ast.Call, fn: _FunctionNode) -> Optional[ModuleInfo]:
        """The module of another file that `fn` (what `call` runs) is defined in; None: this file."""
        imported = self.imported_function(call)
        return imported[0] if imported is not None and imported[1] is fn else None

    def returned_value(self, call: ast.Call) -> Optional[tuple[Optional[ModuleInfo], _FunctionNode, ast.AST]]:
        """(module or None for this file, the function, the expression it returns) when
        `call` runs a function of the project with one `return <value>`."""
        fn = self.called_function(call)
        if fn is None:
            return None
        key = ("sole-return", id(fn))
        if key not in self.memo:
            returns = [n.value for n in iter_scope(fn.body) if isinstance(n, ast.Return)]
            self.memo[key] = returns[0] if len(returns) == 1 else None
        value = self.memo[key]
        if not isinstance(value, ast.AST):
            return None
        return self.called_module(call, fn), fn, value

    def scopes_bind(self, name: str) -> bool:
        """Is `name` bound in one of the functions the walk is in (hiding a module-level name)?"""
        return any(info.binds(name) for info in self.scopes)


def _returns_module(fn: _FunctionNode, model: "CrossFile", module: Optional[ModuleInfo]) -> bool:
    """Does every `return` of `fn` (in this file when `module` is None) give a module built
    there: `return Net(cfg)`, or `model = Net(); ...; return model`? Calls inside are not
    followed further."""
    returns: list[Optional[ast.AST]] = [n.value for n in iter_scope(fn.body) if isinstance(n, ast.Return)]
    if not returns or any(r is None for r in returns):
        return False
    for value in returns:
        if isinstance(value, ast.Name):
            value = model.sole_value(value.id, fn)
        if not isinstance(value, ast.Call):
            return False
        if module is None:
            if not model.builds_module(value, follow=False):
                return False
            continue
        qn = module.qualname(value.func)
        if qn is None or not (is_framework_factory(qn) or model.is_module_base(qn)):
            return False
    return True
