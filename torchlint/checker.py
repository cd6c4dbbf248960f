"""The one traversal: parse a file once, walk its tree once, dispatch each node to
every enabled rule that listens for that node type. Names, bindings and position live in
the semantic model (`torchlint.analysis.semantic`); rules are anything that fits the
`RuleInstance` protocol, so this module imports no rule."""

from __future__ import annotations

import ast
import os
import sys
from functools import lru_cache
from operator import methodcaller

from torchlint import budget
from torchlint.analysis import inference
from torchlint.analysis.nodes import LEAF_TYPES, child_list, node_fields
from torchlint.analysis.project_index import ProjectIndex
from torchlint.analysis.semantic import SemanticModel
from torchlint.diagnostics import Finding, syntax_error_finding
from torchlint.fast_dataclass import dataclass, field
from torchlint.noqa import Suppression, may_suppress, parse as parse_directives
from torchlint.records import Fix
from torchlint.source import DecodeFailure, SourceFile, decode_source, newer_syntax_hint

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Iterable, Optional, Protocol, Sequence

# How the walker treats each node type besides calling rule handlers.
_GENERIC, _FUNCTION, _WITH, _LOOP, _CLASS, _IMPORT = range(6)
_KINDS: dict[type, int] = {
    ast.FunctionDef: _FUNCTION, ast.AsyncFunctionDef: _FUNCTION, ast.With: _WITH, ast.AsyncWith: _WITH,
    ast.For: _LOOP, ast.AsyncFor: _LOOP, ast.While: _LOOP, ast.ClassDef: _CLASS,
    ast.Import: _IMPORT, ast.ImportFrom: _IMPORT,
}

sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))


class FileContext(SemanticModel):
    """What a rule sees while the walk is at a node: the semantic model (names, bindings,
    enclosing function, class, loops and grad-mode regions) plus `report`."""

    def __init__(self, source: SourceFile, tree: ast.Module) -> None:
        super().__init__(tree)
        self.source = source
        # Without `:=` in the text, only statements bind: scopes skip walking expressions.
        self.module_scope.walrus = ":=" in source.text
        self.findings: list[Finding] = []
        self._reported: set[tuple[str, int, int, int, Optional[int]]] = set()
        self.enabled_codes: frozenset[str] = frozenset()  # every rule selected for this file (TL001)
        self.cell_starts: tuple[int, ...] = ()  # a notebook's program: the first row of each code cell

    def report(self, rule: "RuleInstance", node: ast.AST, message: str, *, end_node: Optional[ast.AST] = None,
               **details: Any) -> None:
        """Record a finding on `node` (to the end of `end_node`); a second report of the same
        rule on the same node is dropped. `details`: those of `report_range`."""
        end = end_node if end_node is not None else node
        row = node.lineno  # type: ignore[attr-defined]
        key = (rule.code, row, node.col_offset, getattr(end, "end_lineno", None) or row,  # type: ignore[attr-defined]
               getattr(end, "end_col_offset", None))
        if key in self._reported:
            return
        self._reported.add(key)
        end_row = getattr(end, "end_lineno", None) or row
        end_off = getattr(end, "end_col_offset", None)
        col = self.source.to_col(row, node.col_offset)  # type: ignore[attr-defined]
        end_col = self.source.to_col(end_row, end_off) if end_off is not None else col + 1
        self.report_range(rule, (row, col), (end_row, end_col), message, **details)

    def report_range(self, rule: "RuleInstance", start: tuple[int, int], end: tuple[int, int], message: str, *,
                     params: Optional[dict] = None, severity: Optional[str] = None, help: Optional[str] = None,
                     fix: Optional[Fix] = None) -> None:
        """Record a finding on a text range: 1-based (row, code-point column) positions, the
        end exclusive. Suppression by `# noqa` comes later, in one pass over the file."""
        # Only plain facts (str/int/float/bool) reach the cache; code for --verify is
        # re-derived from the parsed source by torchlint.verify, never stored here.
        params = {k: v for k, v in (params or {}).items() if isinstance(v, (str, int, float, bool))}
        self.findings.append(Finding(
            code=rule.code, name=rule.name, message=message, path=self.source.path,
            row=start[0], col=start[1], end_row=end[0], end_col=end[1],
            severity=severity or rule.severity, probe_params=params,
            help=help, fix=fix,
        ))

    def self_attribute_kind(self, attr: str) -> Optional[str]:
        """Kind of `self.<attr>` (kept for rules written against 0.1's FileContext)."""
        return inference.self_attribute_kind(attr, self)


if TYPE_CHECKING:
    class RuleInstance(Protocol):
        """What the walk needs of a rule (torchlint.rules.base.Rule implements it)."""

        @property
        def code(self) -> str: ...

        @property
        def name(self) -> str: ...

        @property
        def severity(self) -> str: ...

        def handlers(self) -> Iterable[tuple[type, "Handler"]]: ...

        def leave_handlers(self) -> Iterable[tuple[type, "Handler"]]: ...

        def end_file(self, ctx: FileContext) -> None: ...

        def check_noqa(self, ctx: FileContext, suppression: Suppression) -> None: ...

    # Optional: `judges_noqa = False` says `check_noqa` does nothing, so a file whose
    # findings no directive can touch is never tokenized (absent: assumed True).


if TYPE_CHECKING:
    class RuleClass(Protocol):
        @property
        def code(self) -> str: ...

        def applies_to(self, text: str) -> bool: ...

        def __call__(self, ctx: FileContext, settings: Optional[dict[str, Any]] = None) -> RuleInstance: ...


@dataclass
class RuleError:
    """A rule raised while checking a file: reported once, the file's other findings kept."""

    code: str
    path: str
    error: str  # `TypeError: ... (at module.py:12)`

    def describe(self) -> str:
        return f"internal error in rule {self.code} while checking {self.path}: {self.error}; please report this"


@dataclass
class CheckResult:
    findings: list[Finding] = field(default_factory=list)
    rule_errors: list[RuleError] = field(default_factory=list)


if TYPE_CHECKING:
    Handler = Callable[[ast.AST, FileContext], None]
    Dispatch = dict[type, list[Handler]]
    _Plan = tuple[Optional[list[Handler]], int, tuple[str, ...], Optional[list[Handler]]]


class Walker:
    """Pre-order walk that keeps the semantic model's position current. Handlers for a
    node run before its children, `leave_` handlers after them. A handler that raises
    takes its rule out of the rest of this file's walk; the other rules go on."""

    def __init__(self, ctx: FileContext, dispatch: Dispatch, leave: Optional[Dispatch] = None) -> None:
        self.ctx = ctx
        self.dispatch = dispatch
        self.leave = leave or {}
        self.errors: dict[str, RuleError] = {}
        self._plans: dict[type, _Plan] = {}  # see `_plan`
        # A call's handlers by its attribute (None: not an attribute call), leaving out the
        # handlers marked `calls_ending` names the attribute is not (rules.base).
        self._call_handlers: dict[Optional[str], list[Handler]] = {}
        # Leaf types no rule listens for: `_children` does not even call `visit` on them
        # (Name and Constant are about half of all nodes). A failed rule only ever removes
        # handlers, so the set stays right for the rest of the walk.
        self._silent = frozenset(cls for cls in LEAF_TYPES if cls not in self.dispatch and cls not in self.leave)

    def _run(self, handlers: list[Handler], node: ast.AST) -> None:
        ctx = self.ctx
        for handler in handlers:
            try:
                handler(node, ctx)
            except RecursionError:
                raise  # the deep walker takes over
            except Exception as exc:  # a rule bug must not lose the file's other findings
                self.rule_failed(getattr(handler, "__self__", None), exc)

    def rule_failed(self, rule: Optional[RuleInstance], exc: BaseException) -> None:
        import traceback  # only when a rule fails (it imports textwrap)

        code = getattr(rule, "code", "?")
        frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
        where = f" (at {os.path.basename(frame.filename)}:{frame.lineno})" if frame else ""
        self.errors.setdefault(code, RuleError(code, self.ctx.source.path, f"{type(exc).__name__}: {exc}{where}"))
        for table in (self.dispatch, self.leave):
            for node_type, handlers in list(table.items()):
                table[node_type] = [h for h in handlers if getattr(h, "__self__", None) is not rule]
        self._plans.clear()
        self._call_handlers.clear()

    def _plan(self, cls: type) -> _Plan:
        """What `visit` does with a node type, looked up once per type and walk (a failed
        rule clears the table, as its handlers go)."""
        plan = self._plans[cls] = (self.dispatch.get(cls), _KINDS.get(cls, _GENERIC), node_fields(cls),
                                   self.leave.get(cls))
        return plan

    def visit(self, node: ast.AST) -> None:
        cls = type(node)
        handlers, kind, fields, leave = self._plans.get(cls) or self._plan(cls)
        if handlers:
            if cls is ast.Call:
                handlers = self.call_handlers(node.func)  # type: ignore[attr-defined]
            self._run(handlers, node)
        if kind == _GENERIC:
            if fields:
                self._children(node, fields)
        else:
            self._visit_scoping(node, kind)
        if leave:
            self._run(leave, node)

    def _visit_scoping(self, node: ast.AST, kind: int) -> None:
        """The nodes that move the semantic model: functions, `with`, loops, classes, imports."""
        if kind == _FUNCTION:
            self._visit_function(node)
        elif kind == _WITH:
            self._visit_with(node)
        elif kind == _LOOP:
            self._visit_loop(node)
        elif kind == _CLASS:
            self.ctx.classes.append(node)  # type: ignore[arg-type]
            self._children(node, node_fields(type(node)))
            self.ctx.classes.pop()
        else:
            self.ctx.add_import(node)  # a function-level import binds in that function

    def call_handlers(self, func: ast.AST) -> list[Handler]:
        attr = func.attr if type(func) is ast.Attribute else None  # type: ignore[attr-defined]
        found = self._call_handlers.get(attr)
        if found is None:
            every = self.dispatch.get(ast.Call) or []
            found = self._call_handlers[attr] = every if attr is None else [
                h for h in every if attr in getattr(h, "call_attrs", (attr,))]
        return found

    def _children(self, node: ast.AST, fields: tuple[str, ...]) -> None:
        if budget.fallback_clocks:
            budget.check()  # the lint-timeout where no timer signal can stop the walk
        parents = self.ctx.parents
        parents.append(node)
        visit, silent = self.visit, self._silent
        for field_name in fields:
            value = getattr(node, field_name, None)
            if type(value) is list:
                for item in value:
                    if type(item) not in silent and isinstance(item, ast.AST):
                        visit(item)
            elif type(value) not in silent and isinstance(value, ast.AST):
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
        self._header(node, "body")  # decorators, arguments, returns run outside
        self.ctx.enter_function(node)
        self._visit_body(node, node.body)  # type: ignore[attr-defined]
        self.ctx.leave_function()

    def _visit_with(self, node: ast.AST) -> None:
        self._header(node, "body")
        pushed = self.ctx.enter_with(node)
        self._visit_body(node, node.body)  # type: ignore[attr-defined]
        self.ctx.leave_with(pushed)

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
        """Expressions hold no statements or scopes, so an explicit stack replaces
        recursion; `ctx.parents` is cut back to each node's own. An entry whose node is
        None stands for "leave" of the node below it."""
        parents = self.ctx.parents
        base = len(parents)
        stack: list[tuple[ast.AST, int, bool]] = [(root, base, False)]
        while stack:
            node, depth, leaving = stack.pop()
            del parents[depth:]
            cls = type(node)
            if leaving:
                self._run(self.leave[cls], node)
                continue
            handlers = self.dispatch.get(cls)
            if handlers:
                self._run(self.call_handlers(node.func) if cls is ast.Call else handlers, node)  # type: ignore[attr-defined]
            if self.leave.get(cls):
                stack.append((node, depth, True))
            children = child_list(node)
            if children:
                parents.append(node)
                stack.extend((child, depth + 1, False) for child in reversed(children))  # source order
        del parents[base:]


def awake(rule_classes: Iterable[RuleClass], text: str) -> list[RuleClass]:
    """The rules `text` can wake: those with no `requires_text` or one of its strings in the
    text (`applies_to`, for a class without the tuple). Each distinct string is looked for
    once, the shortest of a rule's first (the likeliest to be there): five rules require
    `DataLoader`, and TL901 names fifty strings."""
    found: dict[str, bool] = {}
    woken = []
    for cls in rule_classes:
        needles = getattr(cls, "requires_text", None)
        if needles is None:
            if cls.applies_to(text):
                woken.append(cls)
            continue
        if not needles or any(_present(found, needle, text) for needle in _by_length(needles)):
            woken.append(cls)
    return woken


def _present(found: dict[str, bool], needle: str, text: str) -> bool:
    seen = found.get(needle)
    if seen is None:
        seen = found[needle] = needle in text
    return seen


@lru_cache(maxsize=1024)
def _by_length(needles: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(sorted(needles, key=len))


def build_dispatch(rules: Iterable[RuleInstance], leave: bool = False) -> Dispatch:
    dispatch: Dispatch = {}
    for rule in rules:
        for node_type, handler in (rule.leave_handlers() if leave else rule.handlers()):
            dispatch.setdefault(node_type, []).append(handler)
    return dispatch


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


def check_file(path: str, data: bytes, rule_classes: Sequence[RuleClass], parse_all: bool = True,
               options: Optional[dict[str, dict]] = None, prefilter: bool = True,
               deep: bool = False, index: Optional[ProjectIndex] = None,
               cell_starts: tuple[int, ...] = ()) -> CheckResult:
    """Lint one file's bytes with the given rule classes. A file that never mentions torch
    can hold no rule finding; it is parsed only when `parse_all` (TL000 is selected).
    `prefilter=False` runs every rule whatever the text, and `deep=True` uses only the
    iterative walker (the property tests compare both with the defaults). `index`: the
    rest of the project, for names the file imports (None: the file alone)."""
    if not parse_all and b"torch" not in data:
        return CheckResult()
    source, tree, error = parse_source(path, data)
    if error is not None:
        if source is not None and Suppression(parse_directives(source.text, source.lines)).suppresses(error.code, error.row):
            return CheckResult()
        return CheckResult([error])
    assert source is not None and tree is not None
    # A file that never mentions torch is not PyTorch code: only TL000 applies.
    text = source.text
    if "torch" not in text:
        return CheckResult()
    enabled_codes = frozenset(cls.code for cls in rule_classes)
    classes = awake(rule_classes, text) if prefilter else list(rule_classes)
    if not classes:
        return CheckResult()
    options = options or {}
    walker_types: tuple[type[Walker], ...] = (DeepWalker,) if deep else (Walker, DeepWalker)
    for walker_type in walker_types:
        ctx = FileContext(source, tree)
        ctx.enabled_codes = enabled_codes
        ctx.index = index
        ctx.cell_starts = cell_starts
        walker = walker_type(ctx, {}, {})
        rules: list[RuleInstance] = []
        for cls in classes:
            try:
                rules.append(cls(ctx, options.get(cls.code)))
            except Exception as exc:
                walker.rule_failed(cls, exc)  # type: ignore[arg-type]
        walker.dispatch = build_dispatch(rules)
        walker.leave = build_dispatch(rules, leave=True)
        try:
            walker.visit(tree)
        except RecursionError:
            if walker_type is DeepWalker:
                raise
            continue  # start again with fresh rules and context
        _each_rule(rules, walker, methodcaller("end_file", ctx))
        break
    findings = _suppress(ctx, rules, walker)
    findings.sort(key=Finding.sort_key)
    # The model's memo and scopes point back at it: dropping its state here lets reference
    # counting free the file's analyses now, instead of a cyclic collection later.
    ctx.__dict__.clear()
    return CheckResult(findings, sorted(walker.errors.values(), key=lambda e: e.code))


def _each_rule(rules: list[RuleInstance], walker: Walker, call: Callable[[RuleInstance], None]) -> None:
    """`call` on every rule still standing; one that raises is out of the rest of the file."""
    for rule in rules:
        if rule.code in walker.errors:
            continue
        try:
            call(rule)
        except RecursionError:
            raise
        except Exception as exc:
            walker.rule_failed(rule, exc)


def _suppress(ctx: FileContext, rules: list[RuleInstance], walker: Walker) -> list[Finding]:
    """The suppression pass, after every rule: drop what a directive covers, then let rules
    that judge the directives themselves (TL001) report, and hold those to the directives too."""
    source = ctx.source
    if not any(getattr(rule, "judges_noqa", True) for rule in rules) \
            and not may_suppress(source.text, source.lines, (f.row for f in ctx.findings)):
        return ctx.findings  # no rule reads the directives and none could apply: no tokenizing
    suppression = Suppression(parse_directives(source.text, source.lines))
    kept = suppression.apply(ctx.findings)
    ctx.findings = []
    _each_rule(rules, walker, methodcaller("check_noqa", ctx, suppression))
    return kept + suppression.apply(ctx.findings)


class RuleFailure(Exception):
    """Rules raised and the caller of `check_source` gave no list to collect the errors in."""

    def __init__(self, errors: list[RuleError]) -> None:
        super().__init__("; ".join(e.describe() for e in errors))
        self.errors = errors


def check_source(path: str, data: bytes, rule_classes: Sequence[RuleClass], parse_all: bool = True,
                 options: Optional[dict[str, dict]] = None, rule_errors: Optional[list[RuleError]] = None,
                 index: Optional[ProjectIndex] = None, cell_starts: tuple[int, ...] = ()) -> list[Finding]:
    """The findings of `check_file`. Rule errors are added to `rule_errors` when it is given
    (the other findings are kept); without it they raise RuleFailure, as before."""
    result = check_file(path, data, rule_classes, parse_all, options, index=index, cell_starts=cell_starts)
    if result.rule_errors:
        if rule_errors is None:
            raise RuleFailure(result.rule_errors)
        rule_errors.extend(result.rule_errors)
    return result.findings
