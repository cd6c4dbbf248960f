"""The one traversal: parse a file once, walk its tree once, dispatch each node to
every enabled rule that listens for that node type."""

from __future__ import annotations

import ast
import sys
from typing import TYPE_CHECKING, Callable, Iterable, Optional

from torchlint.analysis import inference
from torchlint.analysis.imports import ImportTable
from torchlint.analysis.loops import calls_in
from torchlint.analysis.nodes import iter_children, node_fields
from torchlint.analysis.scopes import Assignments, GradRegion, Scope, grad_mode_of
from torchlint.diagnostics import Finding
from torchlint.source import DecodeFailure, SourceFile, decode_source, newer_syntax_hint

if TYPE_CHECKING:
    from torchlint.rules.base import Rule

# How the walker treats each node type besides calling rule handlers.
_GENERIC, _FUNCTION, _WITH, _LOOP, _CLASS, _IMPORT = range(6)
_KINDS: dict[type, int] = {
    ast.FunctionDef: _FUNCTION, ast.AsyncFunctionDef: _FUNCTION, ast.With: _WITH, ast.AsyncWith: _WITH,
    ast.For: _LOOP, ast.AsyncFor: _LOOP, ast.While: _LOOP, ast.ClassDef: _CLASS,
    ast.Import: _IMPORT, ast.ImportFrom: _IMPORT,
}

sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))


class FileContext:
    """What a rule sees while the walk is at a node: imports, enclosing function,
    class, loops and grad-mode regions, and cached per-scope analyses."""

    def __init__(self, source: SourceFile, tree: ast.Module) -> None:
        self.source = source
        self.tree = tree
        self.imports = ImportTable()
        self.imports.collect_module_level(tree)
        self.findings: list[Finding] = []
        self.parents: list[ast.AST] = []  # ancestors of the node being visited
        self.functions: list[ast.AST] = []
        self.classes: list[ast.ClassDef] = []
        self.loops: list[ast.AST] = []  # loops of the innermost function only
        self.grad_regions: list[GradRegion] = []  # likewise
        self._assignments: dict[int, Assignments] = {}
        self._module_classes: dict[str, ast.ClassDef] = {
            n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
        self._module_class_memo: dict[str, bool] = {}
        self._self_attrs: dict[int, dict[str, tuple[Optional[str], Optional[str]]]] = {}
        self._body_calls: dict[int, list[ast.Call]] = {}

    # -- names -----------------------------------------------------------
    def qualname(self, node: ast.AST) -> Optional[str]:
        return self.imports.qualname(node)

    def call_name(self, node: ast.AST) -> Optional[str]:
        return self.imports.qualname(node.func) if isinstance(node, ast.Call) else None

    # -- position ----------------------------------------------------------
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

    # -- cached analyses ----------------------------------------------------
    def assignments(self, scope: Optional[Scope] = None) -> Assignments:
        scope = scope if scope is not None else self.scope
        found = self._assignments.get(id(scope))
        if found is None:
            found = self._assignments[id(scope)] = Assignments(scope)
        return found

    def value_before(self, name: ast.Name, lineno: int, module_fallback: bool = False) -> Optional[ast.AST]:
        """The value that the last plain assignment (`=`, annotated, walrus) above `lineno`
        in this scope gave `name`; with `module_fallback`, a module-level one when the scope
        has none. None for unpacking, loop targets, parameters and unknown names."""
        binding = self.assignments().last_before(name.id, lineno)
        if binding is None and module_fallback and self.scope is not self.tree:
            binding = self.assignments(self.tree).last_before(name.id, lineno)
        if binding is None or binding.index is not None \
                or not isinstance(binding.node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)):
            return None
        return binding.value

    def body_calls(self, node: ast.AST) -> list[ast.Call]:
        """The calls in a loop's (or function's) body, outside nested functions; several
        rules ask this about the same loop, some once per call inside it."""
        found = self._body_calls.get(id(node))
        if found is None:
            found = self._body_calls[id(node)] = list(calls_in(node.body))  # type: ignore[attr-defined]
        return found

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
        result = cls is not None and depth < 20 and any(self._base_is_module(b, depth) for b in cls.bases)
        self._module_class_memo[name] = result
        return result

    def _base_is_module(self, base: ast.AST, depth: int) -> bool:
        qn = self.qualname(base)
        if qn is not None:
            return inference.is_module_class_name(qn)
        return isinstance(base, ast.Name) and self.is_module_class_name(base.id, depth + 1)

    def enclosing_module_class(self) -> Optional[ast.ClassDef]:
        """The nn.Module subclass whose method we are in, if any."""
        if not self.classes or not self.functions:
            return None
        cls = self.classes[-1]
        return cls if self.is_module_class(cls) else None

    def self_attribute_kind(self, attr: str) -> Optional[str]:
        """Kind of `self.<attr>` from `self.<attr> = <call>` in the class's methods."""
        found = self._self_attributes().get(attr)
        return found[0] if found else None

    def self_attribute_constructor(self, attr: str) -> Optional[str]:
        """Qualified name of what `self.<attr>` is constructed from (`torch.nn.ModuleList`)."""
        found = self._self_attributes().get(attr)
        return found[1] if found else None

    def _self_attributes(self) -> dict[str, tuple[Optional[str], Optional[str]]]:
        if not self.classes:
            return {}
        cls = self.classes[-1]
        attrs = self._self_attrs.get(id(cls))
        if attrs is None:
            # Registered before it is filled: values like `self.a = self.b.float()` ask
            # about this same class again while we are computing it.
            attrs = self._self_attrs[id(cls)] = {}
            for stmt in ast.walk(cls):
                if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                    t = stmt.targets[0]
                    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                        value = stmt.value
                        kind = inference.kind_of(value, self, 3) if isinstance(value, ast.Call) else None
                        ctor = self.call_name(value)
                        if t.attr in attrs and attrs[t.attr] != (kind, ctor):
                            kind = ctor = None  # assigned differently in different places
                        attrs[t.attr] = (kind, ctor)
        return attrs

    def report(self, rule: "Rule", node: ast.AST, message: str, *, end_node: Optional[ast.AST] = None,
               params: Optional[dict] = None, severity: Optional[str] = None) -> None:
        end = end_node if end_node is not None else node
        row = node.lineno  # type: ignore[attr-defined]
        if self.source.is_suppressed(rule.code, row):
            return
        end_row = getattr(end, "end_lineno", None) or row
        end_off = getattr(end, "end_col_offset", None)
        col = self.source.to_col(row, node.col_offset)  # type: ignore[attr-defined]
        end_col = self.source.to_col(end_row, end_off) if end_off is not None else col + 1
        # Only plain facts (str/int/float/bool) reach the cache; code for --verify is
        # re-derived from the parsed source by torchlint.verify, never stored here.
        params = {k: v for k, v in (params or {}).items() if isinstance(v, (str, int, float, bool))}
        self.findings.append(Finding(
            code=rule.code, name=rule.name, message=message, path=self.source.path,
            row=row, col=col, end_row=end_row, end_col=end_col,
            severity=severity or rule.severity, probe_params=params,
        ))


Handler = Callable[[ast.AST, FileContext], None]


class Walker:
    """Pre-order walk that keeps the FileContext's stacks current. Handlers for a node
    run before its children, with the context of the enclosing code."""

    def __init__(self, ctx: FileContext, dispatch: dict[type, list[Handler]]) -> None:
        self.ctx = ctx
        self.dispatch = dispatch

    def visit(self, node: ast.AST) -> None:
        cls = type(node)
        handlers = self.dispatch.get(cls)
        if handlers:
            ctx = self.ctx
            for handler in handlers:
                handler(node, ctx)
        kind = _KINDS.get(cls, _GENERIC)
        if kind == _GENERIC:
            fields = node_fields(cls)
            if fields:
                self._children(node, fields)
        elif kind == _FUNCTION:
            self._visit_function(node)
        elif kind == _WITH:
            self._visit_with(node)
        elif kind == _LOOP:
            self._visit_loop(node)
        elif kind == _CLASS:
            self.ctx.classes.append(node)  # type: ignore[arg-type]
            self._children(node, node_fields(cls))
            self.ctx.classes.pop()
        elif self.ctx.functions:
            self.ctx.imports.add(node)  # a function-level import

    def _children(self, node: ast.AST, fields: tuple[str, ...]) -> None:
        parents = self.ctx.parents
        parents.append(node)
        visit = self.visit
        for field in fields:
            value = getattr(node, field, None)
            if type(value) is list:
                for item in value:
                    if isinstance(item, ast.AST):
                        visit(item)
            elif isinstance(value, ast.AST):
                visit(value)
        parents.pop()

    def _header(self, node: ast.AST, *skip: str) -> None:
        """Visit everything but the given fields (the body of a function, with or loop)."""
        self._children(node, tuple(f for f in node_fields(type(node)) if f not in skip))

    def _visit_body(self, node: ast.AST, stmts: Iterable[ast.AST]) -> None:
        parents = self.ctx.parents
        parents.append(node)
        for stmt in stmts:
            self.visit(stmt)
        parents.pop()

    def _visit_function(self, node: ast.AST) -> None:
        ctx = self.ctx
        self._header(node, "body")  # decorators, arguments, returns run outside
        saved_loops, saved_regions = ctx.loops, ctx.grad_regions
        ctx.loops, ctx.grad_regions = [], []
        for deco in node.decorator_list:  # type: ignore[attr-defined]
            mode = grad_mode_of(deco, ctx.imports)
            if mode is not None:
                ctx.grad_regions.append(GradRegion(node, mode[0], mode[1]))
        ctx.functions.append(node)
        self._visit_body(node, node.body)  # type: ignore[attr-defined]
        ctx.functions.pop()
        ctx.loops, ctx.grad_regions = saved_loops, saved_regions

    def _visit_with(self, node: ast.AST) -> None:
        ctx = self.ctx
        self._header(node, "body")
        pushed = 0
        for item in node.items:  # type: ignore[attr-defined]
            mode = grad_mode_of(item.context_expr, ctx.imports)
            if mode is not None:
                ctx.grad_regions.append(GradRegion(node, mode[0], mode[1]))
                pushed += 1
        self._visit_body(node, node.body)  # type: ignore[attr-defined]
        del ctx.grad_regions[len(ctx.grad_regions) - pushed:]

    def _visit_loop(self, node: ast.AST) -> None:
        ctx = self.ctx
        self._header(node, "body", "orelse")
        ctx.loops.append(node)
        self._visit_body(node, node.body)  # type: ignore[attr-defined]
        ctx.loops.pop()
        self._visit_body(node, node.orelse)  # type: ignore[attr-defined]


class DeepWalker(Walker):
    """The same walk with expressions visited iteratively: for the rare file whose
    expressions nest deeper than the recursion limit (generated code, `a + a + ... + a`).
    The recursive walk is ~10% faster, so it is tried first."""

    def visit(self, node: ast.AST) -> None:
        if isinstance(node, ast.expr):
            self._visit_expression(node)
        else:
            super().visit(node)

    def _visit_expression(self, root: ast.expr) -> None:
        """Expressions hold no statements or scopes, so an explicit stack of (node, number
        of ancestors) replaces recursion; `ctx.parents` is cut back to each node's own."""
        ctx = self.ctx
        dispatch = self.dispatch
        parents = ctx.parents
        base = len(parents)
        stack: list[tuple[ast.AST, int]] = [(root, base)]
        while stack:
            node, depth = stack.pop()
            del parents[depth:]
            cls = type(node)
            handlers = dispatch.get(cls)
            if handlers:
                for handler in handlers:
                    handler(node, ctx)
            children = list(iter_children(node))
            if children:
                parents.append(node)
                stack.extend((child, depth + 1) for child in reversed(children))  # source order
        del parents[base:]


def build_dispatch(rules: Iterable["Rule"]) -> dict[type, list[Handler]]:
    dispatch: dict[type, list[Handler]] = {}
    for rule in rules:
        for node_type, handler in rule.handlers():
            dispatch.setdefault(node_type, []).append(handler)
    return dispatch


def syntax_error_finding(path: str, message: str, row: int, col: int, text: str = "") -> Finding:
    from torchlint.rules.registry import SYNTAX_ERROR

    return Finding(code=SYNTAX_ERROR.code, name=SYNTAX_ERROR.name, message=message, path=path,
                   row=max(row, 1), col=max(col, 1), end_row=max(row, 1), end_col=max(col, 1) + 1,
                   severity=SYNTAX_ERROR.severity)


def parse_source(path: str, data: bytes) -> tuple[Optional[SourceFile], Optional[ast.Module], Optional[Finding]]:
    """Decode and parse; a failure becomes one TL000 finding instead of an exception."""
    try:
        text = decode_source(data)
    except DecodeFailure as exc:
        return None, None, syntax_error_finding(path, f"cannot decode file: {exc.message}", exc.row, exc.col)
    source = SourceFile(path, text)
    try:
        tree = ast.parse(text, filename=path)
    except SyntaxError as exc:
        row = exc.lineno or 1
        msg = f"SyntaxError: {exc.msg}"
        hint = newer_syntax_hint(source.line(row))
        if hint:
            msg += f" ({hint})"
        return source, None, syntax_error_finding(path, msg, row, exc.offset or 1)
    except (ValueError, MemoryError, RecursionError) as exc:  # null bytes, absurd nesting
        return source, None, syntax_error_finding(path, f"cannot parse file: {exc}", 1, 1)
    return source, tree, None


def check_source(path: str, data: bytes, rule_classes: list[type["Rule"]], parse_all: bool = True,
                 options: Optional[dict[str, dict]] = None) -> list[Finding]:
    """Lint one file's bytes with the given rule classes. A file that never mentions torch
    can hold no rule finding; it is parsed only when `parse_all` (TL000 is selected)."""
    if not parse_all and b"torch" not in data:
        return []
    source, tree, error = parse_source(path, data)
    if error is not None:
        if source is not None and source.is_suppressed(error.code, error.row):
            return []
        return [error]
    assert source is not None and tree is not None
    # A file that never mentions torch is not PyTorch code: only TL000 applies.
    text = source.text
    rule_classes = [cls for cls in rule_classes if cls.applies_to(text)] if "torch" in text else []
    if not rule_classes:
        return []
    options = options or {}
    for walker in (Walker, DeepWalker):
        ctx = FileContext(source, tree)
        rules = [cls(ctx, options.get(cls.code)) for cls in rule_classes]
        try:
            walker(ctx, build_dispatch(rules)).visit(tree)
        except RecursionError:
            if walker is DeepWalker:
                raise
            continue  # start again with fresh rules and context
        for rule in rules:
            rule.end_file(ctx)
        break
    ctx.findings.sort(key=Finding.sort_key)
    return ctx.findings
