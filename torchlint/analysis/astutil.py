"""Small AST helpers shared by rules and analyses: call arguments, literals, source text."""

from __future__ import annotations

import ast
import weakref

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional


_DOTTED_MAX = 60


class _Full(Exception):
    """The bounded unparse has written enough."""


_BASE_UNPARSER: type = getattr(ast, "_Unparser", object)


class _PrefixUnparser(_BASE_UNPARSER):  # type: ignore[misc,valid-type]
    """ast.unparse that stops once its output passes `limit` characters. A message quotes at
    most 60 characters of an expression, and unparsing all of it for every link of a long
    chain (`x.a().b()...`) would make one chain quadratic. Output is only ever appended to
    the top-level buffer, so its prefix is the prefix of the full unparse. Instances made
    without a limit (ast makes some itself for f-string parts) are plain unparsers."""

    def __init__(self, *args: Any, limit: Optional[int] = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._limit = limit
        self._main: Optional[list[str]] = None
        self._written = 0

    def write(self, *text: str) -> None:
        super().write(*text)
        if self._limit is not None and self._source is self._main:
            self._written += sum(map(len, text))
            if self._written > self._limit:
                raise _Full

    def prefix(self, node: ast.AST) -> str:
        self._source = self._main = []
        self._written = 0
        try:
            self.traverse(node)
        except _Full:
            pass
        return "".join(self._main)


_CHAIN = (ast.Attribute, ast.Call, ast.Subscript)
# Height on a chain above which the text is sure to be longer than _DOTTED_MAX: every link
# adds at least two characters (`.a`, `()`, `[0]`) after the text of the link below it.
_CHAIN_CUT = _DOTTED_MAX // 2
# Per chain link: (its height above the chain's bottom link, the node its text starts with,
# None for the link itself). Never the link itself: a value holding its own weak key keeps the
# entry, and the file's tree below it, alive for the rest of the process.
_chain_cut: "weakref.WeakKeyDictionary[ast.AST, tuple[int, Optional[ast.AST]]]" = weakref.WeakKeyDictionary()


def _link_below(node: ast.AST) -> Optional[ast.AST]:
    """The link a chain link's text starts with: `x.a()` starts with `x.a`, which starts with `x`.
    Unparse writes an Attribute's, Call's or Subscript's left part with no parentheses."""
    below = node.func if isinstance(node, ast.Call) else getattr(node, "value", None)
    return below if isinstance(below, _CHAIN) else None


def _text_start(node: ast.AST) -> ast.AST:
    """A node whose full text begins the text of `node` and is already longer than
    _DOTTED_MAX, or `node` itself. Each link of a chain is measured once, so asking about
    every link of a chain of n links costs O(n), not O(n^2)."""
    if not isinstance(node, _CHAIN):
        return node
    spine: list[ast.AST] = []
    cur: Optional[ast.AST] = node
    while cur is not None and cur not in _chain_cut:
        spine.append(cur)
        cur = _link_below(cur)
    height, cut = _chain_cut[cur] if cur is not None else (-1, None)
    for link in reversed(spine):  # upwards from just above `cur` (or from the bottom link)
        height += 1
        if height == _CHAIN_CUT:
            cut = link
        _chain_cut[link] = (height, cut if height >= _CHAIN_CUT and cut is not link else None)
    return _chain_cut[node][1] or node


def dotted(node: ast.AST) -> str:
    """Source-like text for short expressions used in messages (`self.rng`, `p.data`)."""
    try:
        if _BASE_UNPARSER is object:  # pragma: no cover - a Python without ast._Unparser
            text = ast.unparse(node)
        else:
            text = _PrefixUnparser(limit=_DOTTED_MAX).prefix(_text_start(node))
    except Exception:  # pragma: no cover - unparse handles every node ast.parse makes
        return "<expr>"
    return text if len(text) <= _DOTTED_MAX else text[:_DOTTED_MAX - 3] + "..."


def keyword(call: ast.Call, name: str) -> Optional[ast.keyword]:
    for kw in call.keywords:
        if kw.arg == name:
            return kw
    return None


def has_star_kwargs(call: ast.Call) -> bool:
    return any(kw.arg is None for kw in call.keywords)


def arg_or_keyword(call: ast.Call, index: int, name: str) -> Optional[ast.AST]:
    kw = keyword(call, name)
    if kw is not None:
        return kw.value
    if len(call.args) > index and not any(isinstance(a, ast.Starred) for a in call.args[: index + 1]):
        return call.args[index]
    return None


def literal(node: Optional[ast.AST]) -> Any:
    """The Python value of a literal node; `...` (Ellipsis) when it is not a literal."""
    if node is None:
        return ...
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return ...


def bound_arguments(fn: ast.FunctionDef | ast.AsyncFunctionDef, call: ast.Call) -> list[tuple[str, ast.expr]]:
    """(parameter name, argument) for the arguments of `call` that bind a named parameter of
    `fn` (a method called through an attribute skips its `self`/`cls`)."""
    params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
    if params and params[0] in ("self", "cls") and isinstance(call.func, ast.Attribute):
        params = params[1:]
    bound: list[tuple[str, ast.expr]] = [(p, a) for p, a in zip(params, call.args) if not isinstance(a, ast.Starred)]
    names = set(params) | {a.arg for a in fn.args.kwonlyargs}
    return bound + [(k.arg, k.value) for k in call.keywords if k.arg in names]
