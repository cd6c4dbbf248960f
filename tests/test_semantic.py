"""The semantic model's scoping: which import a name means where it is used, and which
binding reaches a line. Asked the way rules ask, from inside the walk."""

from __future__ import annotations

import ast
from typing import Optional

import pytest

from torchlint.checker import FileContext, Walker
from torchlint.source import SourceFile

SOURCE = '''
import torch
import numpy as np

def uses_local_import():
    import torch.nn.functional as T
    return T.relu(x)

def parameter_named_like_it(T, torch):
    return T.relu(x), torch.load(p)

def assigns_it():
    np = load_numpy_stub()
    return np.zeros(3)

def declares_global():
    global np
    return np.zeros(3)

def outer():
    import torch.nn as tnn
    def inner():
        return tnn.Linear(2, 2)
    def shadowing(tnn):
        return tnn.Linear(2, 2)
    return inner

class Model:
    torch = None  # a class attribute does not hide the module name inside methods
    def forward(self):
        return torch.zeros(1)

def rebinding(x):
    x = torch.ones(2)
    x = x.float()
    return x
'''


def resolved_calls() -> dict[tuple[str, int], Optional[str]]:
    """(enclosing function, line) -> qualified name, for every call whose function is an attribute."""
    tree = ast.parse(SOURCE)
    ctx = FileContext(SourceFile("m.py", SOURCE), tree)
    seen: dict[tuple[str, int], Optional[str]] = {}

    def on_call(node: ast.AST, c: FileContext) -> None:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            where = getattr(c.function, "name", "<module>")
            seen[(where, node.lineno, node.func.attr)] = c.call_name(node)  # type: ignore[index]

    Walker(ctx, {ast.Call: [on_call]}).visit(tree)
    return seen  # type: ignore[return-value]


def test_a_function_local_import_binds_only_in_that_function():
    calls = resolved_calls()
    assert calls[("uses_local_import", 7, "relu")] == "torch.nn.functional.relu"
    assert calls[("parameter_named_like_it", 10, "relu")] is None  # the parameter T, not torch
    assert calls[("parameter_named_like_it", 10, "load")] is None  # the parameter torch


def test_local_assignment_hides_and_global_does_not():
    calls = resolved_calls()
    assert calls[("assigns_it", 14, "zeros")] is None
    assert calls[("declares_global", 18, "zeros")] == "numpy.zeros"


def test_nested_functions_see_enclosing_imports_unless_shadowed():
    calls = resolved_calls()
    assert calls[("inner", 23, "Linear")] == "torch.nn.Linear"
    assert calls[("shadowing", 25, "Linear")] is None


def test_class_attributes_do_not_hide_module_names_in_methods():
    assert resolved_calls()[("forward", 31, "zeros")] == "torch.zeros"


def test_the_binding_that_reaches_a_line():
    tree = ast.parse(SOURCE)
    ctx = FileContext(SourceFile("m.py", SOURCE), tree)
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "rebinding")
    ctx.enter_function(fn)
    # `x = x.float()` on line 35 reads the x of line 34, not itself.
    assert [b.lineno for b in ctx.bindings_reaching("x", 35)] == [33, 34]
    assert ctx.binding_before("x", 35).lineno == 35  # type: ignore[union-attr]
    value = ctx.value_before(ast.Name("x"), 34)
    assert isinstance(value, ast.Call) and ctx.call_name(value) == "torch.ones"
    ctx.leave_function()


def test_compatible_names_for_rules_written_against_0_1():
    tree = ast.parse(SOURCE)
    ctx = FileContext(SourceFile("m.py", SOURCE), tree)
    outer = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "outer")
    ctx.enter_function(outer)
    ctx.add_import(outer.body[0])
    assert ctx.imports.aliases["tnn"] == "torch.nn" and ctx.imports.aliases["np"] == "numpy"
    ctx.leave_function()
    assert "tnn" not in ctx.imports.aliases
    assert ctx.self_attribute_kind("anything") is None  # outside a class


def test_a_rule_that_looks_ahead_does_not_fix_what_the_walk_resolves_later():
    """TL104 scans a function's body when the walk enters it, before the walk reaches the
    function's own `import torch`: the answer it gets there must not be the one kept for the
    walk (it hid TL602's `torch.save(module)` whenever TL104 was selected)."""
    source = "def f(buf):\n    import torch\n    torch.save(torch.nn.Linear(2, 2), buf)\n"
    tree = ast.parse(source)
    ctx = FileContext(SourceFile("m.py", source), tree)
    save = tree.body[0].body[1].value  # type: ignore[attr-defined]
    seen: list[Optional[str]] = []

    def look_ahead(node: ast.AST, c: FileContext) -> None:
        seen.append(c.call_name(save))

    def on_call(node: ast.AST, c: FileContext) -> None:
        if node is save:
            seen.append(c.call_name(node))

    Walker(ctx, {ast.FunctionDef: [look_ahead], ast.Call: [on_call]}).visit(tree)
    assert seen == [None, "torch.save"]


def test_iter_statements_reaches_every_statement_and_no_expression():
    import ast

    from torchlint.analysis.nodes import iter_statements

    tree = ast.parse(
        "class M:\n"
        "    def __init__(self, x):\n"
        "        if x:\n"
        "            self.a = 1\n"
        "        else:\n"
        "            try:\n"
        "                self.b = f(lambda: 0)\n"
        "            except E:\n"
        "                self.c = 2\n"
        "            finally:\n"
        "                pass\n"
        "        match x:\n"
        "            case 1:\n"
        "                with g() as h:\n"
        "                    self.d = h\n"
        "        def inner():\n"
        "            self.e = 3\n")
    cls = tree.body[0]
    expected = sorted(id(n) for n in ast.walk(cls) if isinstance(n, ast.stmt) and n is not cls)
    found = list(iter_statements(cls))
    assert sorted(id(n) for n in found if isinstance(n, ast.stmt)) == expected
    assert not any(isinstance(n, ast.expr) for n in found)
    assigned = {n.targets[0].attr for n in found if isinstance(n, ast.Assign)}
    assert assigned == {"a", "b", "c", "d", "e"}


BINDING_KINDS = '''
def f(items):
    for i, item in enumerate(items):
        with open(item) as fh, lock:
            data = fh.read()
    try:
        data = parse(data)
    except ValueError as err:
        data = None
    else:
        data = data or fallback
    finally:
        done = True
    match data:
        case {"k": v}:
            data = v
    def helper():
        pass
    return data, helper
'''


@pytest.mark.parametrize("walrus", [False, True])
def test_bindings_are_the_same_with_or_without_walking_expressions(walrus):
    """Without a `:=` in the file, a scope's bindings come from its statements alone (no walk
    of expressions): the same bindings, in the same order, as the full walk."""
    from torchlint.analysis.scopes import Assignments

    fn = ast.parse(BINDING_KINDS).body[0]
    full, statements = Assignments(fn, True), Assignments(fn, walrus)
    shape = lambda a: {k: [(type(b.node).__name__, b.lineno, b.index) for b in v] for k, v in a.by_name.items()}  # noqa: E731
    assert shape(statements) == shape(full) and list(statements.by_name) == list(full.by_name)
    assert [b.lineno for b in full.get("data")] == [5, 7, 9, 11, 16]
    assert {"i", "item", "fh", "err", "done", "helper", "items"} <= set(full.by_name)


def test_a_walrus_binding_is_found_when_the_file_has_one():
    source = "def f(xs):\n    if (n := len(xs)) > 3:\n        return n\n"
    tree = ast.parse(source)
    ctx = FileContext(SourceFile("w.py", source), tree)
    assert ctx.module_scope.walrus is True
    fn = tree.body[0]
    assert [type(b.node).__name__ for b in ctx.scope_info(fn).assignments.get("n")] == ["NamedExpr"]
    plain = "def f(xs):\n    n = len(xs)\n    return n\n"
    assert FileContext(SourceFile("p.py", plain), ast.parse(plain)).module_scope.walrus is False
