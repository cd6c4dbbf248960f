"""Calls of the user's functions and classes, statically: which argument a call gives each
parameter (the slicer binds a function's parameters from its first call), and the first
call of a class whose arguments are all literals (the project import builds the class with
them)."""

from __future__ import annotations

import ast

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional


def parameters(function: ast.FunctionDef) -> list[str]:
    args = function.args
    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    return names + [a.arg for a in (args.vararg, args.kwarg) if a is not None]


def argument_values(function: ast.FunctionDef, call: ast.Call) -> Optional[dict[str, ast.expr]]:
    """parameter -> the expression the call (or the default) gives it; None for calls with
    `*args`/`**kwargs` on either side, which are not worth guessing."""
    args = function.args
    if args.vararg or args.kwarg or any(isinstance(a, ast.Starred) for a in call.args) or any(
            k.arg is None for k in call.keywords):
        return None
    positional = [*args.posonlyargs, *args.args]
    if len(call.args) > len(positional):
        return None
    values: dict[str, ast.expr] = {p.arg: v for p, v in zip(positional, call.args)}
    for k in call.keywords:
        values[k.arg] = k.value  # type: ignore[index]
    for p, default in zip(positional[len(positional) - len(args.defaults):], args.defaults):
        values.setdefault(p.arg, default)
    for p, kw_default in zip(args.kwonlyargs, args.kw_defaults):
        if kw_default is not None:
            values.setdefault(p.arg, kw_default)
    return values


_PLAIN = (str, int, float, bool, type(None))


def _literal(node: ast.expr) -> tuple[bool, Any]:
    """(True, value) for a literal of plain JSON-able values (bounded: at most 64 items)."""
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None
    if isinstance(value, (list, tuple)) and len(value) <= 64 and all(type(v) in _PLAIN for v in value):
        return True, list(value)
    if type(value) is str and len(value) > 200 or type(value) is int and abs(value) > 2**31:
        return False, None
    return (True, value) if type(value) in _PLAIN else (False, None)


def literal_call(tree: ast.Module, name: str) -> Optional[tuple[tuple[Any, ...], tuple[tuple[str, Any], ...], int]]:
    """(args, kwargs, line) of the first call `name(...)` / `x.name(...)` in the module whose
    arguments are all literals, or None."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        if called != name or any(isinstance(a, ast.Starred) for a in node.args) or any(
                k.arg is None for k in node.keywords):
            continue
        values = [_literal(a) for a in node.args]
        keywords = [(k.arg, _literal(k.value)) for k in node.keywords]
        if all(ok for ok, _ in values) and all(ok for _, (ok, _) in keywords):
            return tuple(v for _, v in values), tuple((k, v) for k, (_, v) in keywords), node.lineno  # type: ignore[misc]
    return None
