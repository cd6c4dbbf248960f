"""The semantic model under the walk: scopes with their own import tables and bindings,
qualified names, where the walk is (function, class, loops, grad-mode regions), and
module-class inference. Every rule asks about names through this one model.

The walker (`torchlint.checker`) keeps the position current by calling the `enter_*` /
`leave_*` methods; everything else is computed lazily and cached per scope."""

from __future__ import annotations

import ast

from torchlint.analysis.cross_file import CrossFile
from torchlint.analysis.imports import ImportTable, QualNames, qualify
from torchlint.analysis.project_index import ProjectIndex
from torchlint.analysis.nodes import iter_children, iter_statements
from torchlint.analysis.scopes import (FUNCTION_TYPES, Assignments, Binding, GradRegion, grad_mode_of,
                                       iter_scope, local_names)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable, Iterator, Optional, Union
    from torchlint.analysis.scopes import Scope
    _FunctionNode = Union[ast.FunctionDef, ast.AsyncFunctionDef]

_PLAIN_ASSIGNMENTS = (ast.Assign, ast.AnnAssign, ast.NamedExpr)
_UNSET = object()


class ScopeInfo:
    """One function (or the module): the imports made in it and, lazily, its bindings."""

    __slots__ = ("node", "parent", "imports", "_assignments", "_bound", "walrus")

    def __init__(self, node: Scope, parent: Optional["ScopeInfo"]) -> None:
        self.node = node
        self.parent = parent
        self.walrus: bool = parent.walrus if parent is not None else True  # may the file hold a `:=`?
        self.imports = ImportTable()
        self._assignments: Optional[Assignments] = None
        self._bound: Optional[frozenset[str]] = None

    @property
    def assignments(self) -> Assignments:
        if self._assignments is None:
            self._assignments = Assignments(self.node, self.walrus)
        return self._assignments

    def binds(self, name: str) -> bool:
        """Is `name` local to this function (a parameter, an assignment, a def...)?"""
        if self._bound is None:
            self._bound = local_names(self.node)
        return name in self._bound


class _ScopedImports:
    """The import table as seen from the current scope (duck-types ImportTable.qualname)."""

    __slots__ = ("model",)

    def __init__(self, model: "SemanticModel") -> None:
        self.model = model

    def qualname(self, node: ast.AST) -> Optional[str]:
        return self.model.qualname(node)

    def call_name(self, node: ast.AST) -> Optional[str]:
        return self.model.call_name(node)

    @property
    def aliases(self) -> dict[str, str]:
        """Name -> what it was imported as, here: module-level imports overlaid with those of
        the enclosing functions (for spelling a name in a fix; parameters are not subtracted)."""
        merged = dict(self.model.module_scope.imports.aliases)
        for info in self.model.scopes:
            merged.update(info.imports.aliases)
        return merged


class SemanticModel(CrossFile):
    """Names, bindings and position for one parsed module."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.module_scope = ScopeInfo(tree, None)
        self.module_scope.imports.collect_module_level(tree)
        self._module_aliases = self.module_scope.imports.aliases
        self.imports = _ScopedImports(self)
        self.parents: list[ast.AST] = []  # ancestors of the node being visited
        self.functions: list[ast.AST] = []
        self.scopes: list[ScopeInfo] = []  # one per entry of `functions`
        self.classes: list[ast.ClassDef] = []
        self.loops: list[ast.AST] = []  # loops of the innermost function only
        self.grad_regions: list[GradRegion] = []  # likewise
        self._scope_info: dict[int, ScopeInfo] = {id(tree): self.module_scope}
        self._module_classes: dict[str, ast.ClassDef] = {
            n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
        self._module_functions: dict[str, _FunctionNode] = {
            n.name: n for n in tree.body if isinstance(n, FUNCTION_TYPES)}
        self._module_class_memo: dict[str, bool] = {}
        self._self_attrs: dict[int, dict[str, tuple[Optional[str], Optional[ast.AST]]]] = {}
        self.extra_module_bases: frozenset[str] = frozenset()  # config `module-bases`
        self.memo: dict[tuple, object] = {}  # per-file caches of analyses built on the model
        self._body_calls: dict[int, list[ast.Call]] = {}
        self._saved: list[tuple[list[ast.AST], list[GradRegion]]] = []
        self._local_imports = 0  # function-level imports met so far
        self._qualnames: dict[tuple[int, int], Optional[str]] = {}
        self._on_path: dict[str, dict[int, bool]] = {}
        self._in_body: dict[str, dict[int, bool]] = {}
        self.index: Optional[ProjectIndex] = None  # the other files of the project (None: this file alone)
        self._relative: Optional[dict[str, str]] = None

    # -- position (kept current by the walker) ---------------------------------
    def enter_function(self, node: ast.AST) -> None:
        parent = self.scopes[-1] if self.scopes else self.module_scope
        info = ScopeInfo(node, parent)  # type: ignore[arg-type]
        self._scope_info[id(node)] = info
        self._saved.append((self.loops, self.grad_regions))
        self.loops, self.grad_regions = [], []
        for deco in node.decorator_list:  # type: ignore[attr-defined]
            mode = grad_mode_of(deco, self.imports)
            if mode is not None:
                self.grad_regions.append(GradRegion(node, mode[0], mode[1]))
        self.functions.append(node)
        self.scopes.append(info)

    def leave_function(self) -> None:
        self.functions.pop()
        self.scopes.pop()
        self.loops, self.grad_regions = self._saved.pop()

    def enter_with(self, node: ast.AST) -> int:
        pushed = 0
        for item in node.items:  # type: ignore[attr-defined]
            mode = grad_mode_of(item.context_expr, self.imports)
            if mode is not None:
                self.grad_regions.append(GradRegion(node, mode[0], mode[1]))
                pushed += 1
        return pushed

    def leave_with(self, pushed: int) -> None:
        if pushed:
            del self.grad_regions[len(self.grad_regions) - pushed:]

    def add_import(self, node: ast.AST) -> None:
        """A function-level import binds its names in that function only."""
        if self.scopes:
            self.scopes[-1].imports.add(node)
            self._local_imports += 1

    def any_ancestor(self, key: str, test: Callable[[ast.AST], bool]) -> bool:
        """Does `test` hold for any node on the path to the node being visited (`parents`)?
        A node's ancestors are the same whichever descendant asks, so the answer for the
        path down to each ancestor is kept (under `key`, one per kind of question) and each
        ancestor is tested once: a call in branch k of an n-branch `elif` chain (k nested
        Ifs) costs O(1), not O(k). `test` must depend on the node alone."""
        memo = self._on_path.get(key)
        if memo is None:
            memo = self._on_path[key] = {}
        parents = self.parents
        start = len(parents)
        while start and id(parents[start - 1]) not in memo:
            start -= 1
        found = memo[id(parents[start - 1])] if start else False
        for parent in parents[start:]:
            found = found or test(parent)
            memo[id(parent)] = found
        return found

    def branches_since(self, ancestor: ast.AST, kinds: tuple[type, ...] = (ast.If, ast.IfExp)) -> bool:
        """Is there a node of `kinds` (a conditional) between `ancestor` (on the path, such as
        the innermost loop) and the node being visited? Scanned upwards from the node, so the
        cost is the distance to the nearer of the two, not the depth of the whole path (a
        loop inside a long `elif` chain)."""
        for parent in reversed(self.parents):
            if parent is ancestor:
                return False
            if isinstance(parent, kinds):
                return True
        return False

    @property
    def parent(self) -> Optional[ast.AST]:
        return self.parents[-1] if self.parents else None

    @property
    def function(self) -> Optional[ast.AST]:
        return self.functions[-1] if self.functions else None

    @property
    def scope(self) -> Scope:
        return self.functions[-1] if self.functions else self.tree  # type: ignore[return-value]

    @property
    def grad_region(self) -> Optional[GradRegion]:
        return self.grad_regions[-1] if self.grad_regions else None

    def grad_disabled(self) -> bool:
        region = self.grad_region
        return region is not None and region.disabled

    # -- names ------------------------------------------------------------------
    def resolve_import(self, name: str) -> Optional[str]:
        """What an imported base name stands for here: the innermost function-level import
        wins; a parameter or local variable of the same name hides imports further out."""
        module_alias = self._module_aliases.get(name)
        if module_alias is None and not self._local_imports:
            return None  # most names asked about: locals, `self`, builtins
        for info in reversed(self.scopes):
            local = info.imports.aliases.get(name)
            if local is not None:
                return local
            if module_alias is not None or info.parent is not self.module_scope:
                if info.binds(name):
                    return None
        return module_alias

    def qualname(self, node: ast.AST) -> Optional[str]:
        """`F.cross_entropy` -> `torch.nn.functional.cross_entropy`; None when the base
        name is not an import visible here (a local variable, an attribute of `self`...).
        Several rules ask about the same call: the answer is kept per node and per count of
        function-level imports met, so a rule that looks ahead (a body scanned before the walk
        reaches its `import torch`) does not fix the answer the walk gets there."""
        key = (id(node), self._local_imports)
        found = self._qualnames.get(key, _UNSET)
        if found is not _UNSET:
            return found  # type: ignore[return-value]
        found = self._qualnames[key] = self._resolve_qualname(node)
        return found

    def _resolve_qualname(self, node: ast.AST) -> Optional[str]:
        return qualify(node, self.resolve_import if self.scopes else self._module_aliases.get)

    def call_name(self, node: ast.AST) -> Optional[str]:
        return self.qualname(node.func) if isinstance(node, ast.Call) else None

    def call_among(self, node: ast.AST, names: QualNames) -> Optional[str]:
        """`call_name(node)` when it is one of `names`, else None. Most calls are methods
        whose attribute ends none of the names: those cost no name resolution."""
        if type(node) is not ast.Call:
            return None
        func = node.func  # type: ignore[attr-defined]
        if type(func) is ast.Attribute and func.attr not in names.lasts:  # a bare name may be an alias of anything
            return None
        found = self.qualname(func)
        return found if found in names else None

    # -- bindings ------------------------------------------------------------------
    def scope_info(self, scope: Optional[Scope] = None) -> ScopeInfo:
        scope = scope if scope is not None else self.scope
        info = self._scope_info.get(id(scope))
        if info is None:  # a function the walk has not entered (asked about from elsewhere)
            info = self._scope_info[id(scope)] = ScopeInfo(scope, self.module_scope)
        return info

    def assignments(self, scope: Optional[Scope] = None) -> Assignments:
        return self.scope_info(scope).assignments

    def is_local(self, name: str, scope: Optional[Scope] = None) -> bool:
        """Is `name` bound in this function (so a module-level name of that name is hidden)?"""
        return self.scope_info(scope).binds(name)

    def binding_before(self, name: str, lineno: int, module_fallback: bool = False,
                       through_augmented: bool = False) -> Optional[Binding]:
        """The binding of `name` that reaches line `lineno` in straight-line code in this
        scope; with `module_fallback`, the module's last binding when the name is not local;
        with `through_augmented`, `x += ...` counts as the same object (not a new binding)."""
        info = self.scope_info()
        found = info.assignments.last_before(name, lineno, skip_augmented=through_augmented)
        if found is None and module_fallback and info is not self.module_scope and not info.binds(name):
            found = self.module_scope.assignments.last_before(name, 10**9)
        return found

    def sole_value(self, name: str, scope: Scope) -> Optional[ast.AST]:
        """The value of `name` in `scope` (any function) when one plain assignment binds it."""
        return self.scope_info(scope).assignments.sole_value(name)

    def value_before(self, name: ast.Name, lineno: int, module_fallback: bool = False) -> Optional[ast.AST]:
        """The value that the plain assignment (`=`, annotated, walrus) reaching `lineno`
        gave `name`. None for unpacking, loop targets, parameters and unknown names."""
        binding = self.binding_before(name.id, lineno, module_fallback)
        if binding is None or binding.index is not None or not isinstance(binding.node, _PLAIN_ASSIGNMENTS):
            return None
        return binding.value

    def bindings_reaching(self, name: str, lineno: int) -> list[Binding]:
        """This scope's bindings of `name` above `lineno`; when it has none, every binding
        of the module-level name (a function runs after the module body)."""
        info = self.scope_info()
        # `x = f(x)` reads the earlier x: an assignment on the asking line does not reach it.
        local = [b for b in info.assignments.get(name) if b.lineno < lineno
                 or (b.lineno == lineno and not isinstance(b.node, (ast.Assign, ast.AugAssign, ast.AnnAssign)))]
        if local or info is self.module_scope or info.binds(name):
            return local
        return list(self.module_scope.assignments.get(name))

    # -- calls and same-file functions ----------------------------------------------
    def body_calls(self, node: ast.AST) -> list[ast.Call]:
        """The calls in a loop's (or function's) body, outside nested functions; several
        rules ask this about the same loop."""
        found = self._body_calls.get(id(node))
        if found is None:
            body = node.body if isinstance(node.body, list) else [node.body]  # type: ignore[attr-defined]
            found = self._body_calls[id(node)] = [n for n in iter_scope(body) if isinstance(n, ast.Call)]
        return found

    def called_function(self, call: ast.Call) -> Optional[_FunctionNode]:
        """The function of this file that `call` runs: `helper()` for a module-level def
        (not shadowed here) or `self.helper()` for a method of the enclosing class."""
        func = call.func
        if isinstance(func, ast.Name):
            fn = self._module_functions.get(func.id)
            if fn is not None or func.id in self._module_classes:
                return None if any(info.binds(func.id) for info in self.scopes) else fn
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            for stmt in self.classes[-1].body if self.classes else ():
                if isinstance(stmt, FUNCTION_TYPES) and stmt.name == func.attr:
                    return stmt
            return None
        found = self.imported_function(call)
        return found[1] if found is not None else None

    def followed_calls(self, node: ast.AST) -> list[ast.Call]:
        """`body_calls(node)` plus the calls in the bodies of same-file functions called
        there, one level deep: `reset_grad()` counts as the `zero_grad()` it makes."""
        key = -id(node)
        found = self._body_calls.get(key)
        if found is None:
            found = list(self.body_calls(node))
            seen: set[int] = {id(node)}
            for call in list(found):
                fn = self.called_function(call)
                if fn is not None and id(fn) not in seen:
                    seen.add(id(fn))
                    found.extend(self.body_calls(fn))
            self._body_calls[key] = found
        return found

    def body_has(self, key: str, stmts: list[ast.stmt], test: Callable[[ast.AST], bool]) -> bool:
        """`any(test(n) for n in iter_scope(stmts))`, with the answer kept per statement under
        `key`: nested loops each asking about their whole body cost O(size), not O(size x
        depth). `test` must depend on the node alone."""
        memo = self._in_body.get(key)
        if memo is None:
            memo = self._in_body[key] = {}
        return any(_subtree_has(memo, stmt, test) for stmt in stmts)

    def followed_has(self, key: str, node: ast.AST, test: Callable[[ast.AST], bool]) -> bool:
        """`any(test(n) for n in self.followed_nodes(node))`, memoized like `body_has`."""
        calls = self.body_calls(node)
        # Most tests match a call (`zero_grad()`): the body's calls, listed once for every
        # rule, answer without a walk of the body's other nodes.
        if any(test(call) for call in calls) or self.body_has(key, node.body, test):  # type: ignore[attr-defined]
            return True
        seen: set[int] = set()
        for call in calls:
            fn = self.called_function(call)
            if fn is not None and id(fn) not in seen:
                seen.add(id(fn))
                if self.body_has(key, fn.body, test):
                    return True
        return False

    def followed_nodes(self, node: ast.AST) -> Iterator[ast.AST]:
        """Every node of `node`'s body and of the same-file functions it calls (one level)."""
        body = node.body  # type: ignore[attr-defined]
        yield from iter_scope(body)
        seen: set[int] = set()
        for call in self.body_calls(node):
            fn = self.called_function(call)
            if fn is not None and id(fn) not in seen:
                seen.add(id(fn))
                yield from iter_scope(fn.body)

    # -- classes ------------------------------------------------------------------
    def module_class(self, name: str) -> Optional[ast.ClassDef]:
        return self._module_classes.get(name)

    def is_module_class(self, cls: ast.ClassDef) -> bool:
        return self.is_module_class_name(cls.name) if self._module_classes.get(cls.name) is cls \
            else any(self._base_is_module(b, 0) for b in cls.bases)

    def is_module_class_name(self, name: str, depth: int = 0) -> bool:
        """True for a class defined in this file that derives (directly or through other
        classes of this file) from torch.nn.Module or a torch.nn layer."""
        memo = self._module_class_memo.get(name)
        if memo is not None:
            return memo
        cls = self._module_classes.get(name)
        self._module_class_memo[name] = False  # a cycle of bases is not a module
        result = cls is not None and depth < 20 and any(self._base_is_module(b, depth) for b in cls.bases)
        self._module_class_memo[name] = result
        return result

    def _base_is_module(self, base: ast.AST, depth: int) -> bool:
        qn = self.module_scope.imports.qualname(base)  # bases resolve at module level
        if qn is not None:
            return self.is_module_base(qn)
        if isinstance(base, ast.Name) and base.id in self._module_classes:
            return self.is_module_class_name(base.id, depth + 1)
        qn = self.relative_qualname(base)
        return qn is not None and self.is_module_base(qn)

    def enclosing_module_class(self) -> Optional[ast.ClassDef]:
        """The nn.Module subclass whose method we are in, if any."""
        if not self.classes or not self.functions:
            return None
        cls = self.classes[-1]
        return cls if self.is_module_class(cls) else None

    def self_attribute_constructor(self, attr: str, cls: Optional[ast.ClassDef] = None) -> Optional[str]:
        """Qualified name of what `self.<attr>` is constructed from (`torch.nn.ModuleList`)."""
        found = self._self_attributes(cls).get(attr)
        return found[0] if found else None

    def self_attribute_value(self, attr: str, cls: Optional[ast.ClassDef] = None) -> Optional[ast.AST]:
        """The value of `self.<attr> = <value>` in the class's methods (None when it is
        assigned more than once)."""
        found = self._self_attributes(cls).get(attr)
        return found[1] if found else None

    def _self_attributes(self, cls: Optional[ast.ClassDef] = None) -> dict[str, tuple[Optional[str], Optional[ast.AST]]]:
        if cls is None:
            if not self.classes:
                return {}
            cls = self.classes[-1]
        attrs = self._self_attrs.get(id(cls))
        if attrs is None:
            attrs = self._self_attrs[id(cls)] = {}
            for stmt in iter_statements(cls):  # an assignment is a statement: expressions are not walked
                if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                    t = stmt.targets[0]
                    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                        ctor = self.module_scope.imports.call_name(stmt.value)
                        if t.attr in attrs:
                            # Assigned in several places: the constructor only if they agree.
                            attrs[t.attr] = (ctor if attrs[t.attr][0] == ctor else None, None)
                        else:
                            attrs[t.attr] = (ctor, stmt.value)
        return attrs


_SCOPE_NODES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def _subtree_has(memo: dict[int, bool], root: ast.AST, test: Callable[[ast.AST], bool]) -> bool:
    """Does `test` hold for `root` or a node under it (iter_scope's nodes, in its order)?
    Iterative (an `elif` chain nests statements without limit); statements' answers go to
    `memo`, so a statement under several asking loops is searched once."""
    known = memo.get(id(root))
    if known is not None:
        return known
    if test(root):
        memo[id(root)] = True
        return True
    if isinstance(root, _SCOPE_NODES):
        memo[id(root)] = False
        return False
    stack: list[tuple[ast.AST, Iterator[ast.AST]]] = [(root, iter_children(root))]
    stmt, scopes, get = ast.stmt, _SCOPE_NODES, memo.get
    while stack:
        node, children = stack[-1]
        for child in children:
            if isinstance(child, stmt):
                known = get(id(child))
                if known is False:
                    continue
            else:
                known = None
            if known or test(child):
                for open_node, _ in stack:
                    if isinstance(open_node, stmt):
                        memo[id(open_node)] = True
                return True
            if not isinstance(child, scopes):
                stack.append((child, iter_children(child)))
                break
        else:
            stack.pop()
            if isinstance(node, stmt):
                memo[id(node)] = False
    return False
