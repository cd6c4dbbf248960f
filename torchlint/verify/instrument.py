"""Per rule: which extra code a slice needs and where it is observed. The flagged call or
statement is wrapped so the worker records its inputs, its value or its exception, and
stops the run there (or, for a data write, after the next backward pass). Each rule names its
slice shape (a key of `SLICES`) in its `evidence.slice`.

Wrappers (defined by the worker, names reserved: the validator refuses `_tl_` in user code):
- `_tl_call(tag, f, *args, **kwargs)`: records f, args, value or exception;
- `_tl_at(tag, lambda: expr)`: records the value of an expression;
- a flagged statement becomes `try: stmt / except Exception as e: _tl_raised(tag, e) /
  else: _tl_ran(tag)`;
- `_tl_mark(tag)`: records that execution got past a statement."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Callable, Optional

from torchlint.verify.slicer import Slice, statement_of

Related = Callable[[ast.Module, ast.AST, dict[int, ast.AST]], list[ast.AST]]
Seeds = Callable[[list[ast.stmt]], list[ast.stmt]]


@dataclass(frozen=True)
class SliceRule:
    instrument: Callable[[Slice], Optional[list[ast.Module]]]  # variants to run, or None
    # When a run stops: "flag" (after the flagged call), "flag*2" (after its second call),
    # "backward" (after the first backward pass that follows the flagged statement).
    stop: str = "flag"
    related: Optional[Related] = None
    extra_seed: Optional[Seeds] = None
    construct: bool = False  # slice a module-level class and instantiate it
    grads: bool = False  # record the gradients around each observed call
    observe: Optional[Callable[[Slice], dict[str, str]]] = None  # names the judge needs


def _call(name: str, *args: ast.expr) -> ast.Call:
    return ast.Call(func=ast.Name(name, ast.Load()), args=list(args), keywords=[])


def _replace(sl: Slice, old: ast.AST, new: ast.AST) -> None:
    parent = sl.parent_of(old)
    assert parent is not None
    for name, value in ast.iter_fields(parent):
        if value is old:
            setattr(parent, name, new)
            return
        if isinstance(value, list):
            for i, item in enumerate(value):
                if item is old:
                    value[i] = new
                    return
    raise ValueError("node not found under its parent")


def wrap_call(call: ast.Call, tag: str) -> None:
    if isinstance(call.func, ast.Name) and call.func.id == "_tl_call" and call.args \
            and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
        # Observed for another finding of the same program run (verify/program.py): one
        # call, recorded for both.
        call.args[0] = ast.Constant(f"{call.args[0].value} {tag}")
        return
    call.args = [ast.Constant(tag), call.func, *call.args]
    call.func = ast.Name("_tl_call", ast.Load())


def wrap_expr(sl: Slice, node: ast.expr, tag: str) -> None:
    lam = ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[],
                                        kwarg=None, defaults=[]), body=node)
    _replace(sl, node, _call("_tl_at", ast.Constant(tag), lam))


def wrap_statement(sl: Slice, stmt: ast.stmt, tag: str) -> None:
    handler = ast.ExceptHandler(type=ast.Name("Exception", ast.Load()), name="_tl_e",
                                body=[ast.Expr(_call("_tl_raised", ast.Constant(tag), ast.Name("_tl_e", ast.Load())))])
    wrapped = ast.Try(body=[stmt], handlers=[handler], orelse=[ast.Expr(_call("_tl_ran", ast.Constant(tag)))],
                      finalbody=[])
    _replace(sl, stmt, wrapped)


def _block_of(sl: Slice, stmt: ast.stmt) -> list[ast.stmt]:
    parent = sl.parent_of(stmt)
    for name, value in ast.iter_fields(parent):  # type: ignore[arg-type]  # a statement has a parent
        if isinstance(value, list) and any(item is stmt for item in value):
            return value
    raise ValueError("statement not in a block")


def finish(module: ast.Module) -> ast.Module:
    return ast.fix_missing_locations(module)


# -- finding the call a flagged value feeds ------------------------------------------
def _consumer(position: int, keyword: str) -> Related:
    """The call that takes the flagged node (or a name assigned from it) as its argument
    `position` / `keyword=`: the loss call a cast target or an activation feeds."""
    def related(tree: ast.Module, node: ast.AST, parents: dict[int, ast.AST]) -> list[ast.AST]:
        call = _consuming_call(tree, node, parents, position, keyword)
        return [call] if call is not None else []
    return related


def _consuming_call(tree: ast.AST, node: ast.AST, parents: dict[int, ast.AST], position: int,
                    keyword: str) -> Optional[ast.Call]:
    names: set[str] = set()
    stmt = statement_of(node, parents)
    if isinstance(stmt, ast.Assign) and stmt.value is node:
        names = {t.id for t in stmt.targets if isinstance(t, ast.Name)}
    best: Optional[ast.Call] = None
    for call in ast.walk(tree):
        if not isinstance(call, ast.Call):
            continue
        arg = call.args[position] if len(call.args) > position else next(
            (k.value for k in call.keywords if k.arg == keyword), None)
        if arg is node or isinstance(arg, ast.Name) and arg.id in names and call.lineno >= stmt.lineno:
            if best is None or (call.lineno, call.col_offset) < (best.lineno, best.col_offset):
                best = call
    return best


def _flag_call(sl: Slice) -> Optional[ast.Call]:
    node: Optional[ast.AST] = sl.flagged
    if isinstance(node, ast.keyword):
        node = sl.parent_of(node)
    return node if isinstance(node, ast.Call) else None


# -- per-rule instrumentation ----------------------------------------------------------
def _on_call(sl: Slice) -> Optional[list[ast.Module]]:
    call = _flag_call(sl)
    if call is None:
        return None
    wrap_call(call, "flag")
    return [finish(sl.module)]


def _on_consumer(position: int, keyword: str, inner_tag: Optional[str]) -> Callable[[Slice], Optional[list[ast.Module]]]:
    def instrument(sl: Slice) -> Optional[list[ast.Module]]:
        call = _consuming_call(sl.module, sl.flagged, sl.parents, position, keyword)
        if call is None:
            return None
        if inner_tag is not None and isinstance(sl.flagged, ast.Call):
            wrap_call(sl.flagged, inner_tag)
        wrap_call(call, "flag")
        return [finish(sl.module)]
    return instrument


def _on_statement(value_tag: Optional[str]) -> Callable[[Slice], Optional[list[ast.Module]]]:
    """Wrap the flagged statement; optionally record the flagged expression's owner
    (`x` of `x.require_grad = True`) or the value added (`loss` of `total += loss`)."""
    def instrument(sl: Slice) -> Optional[list[ast.Module]]:
        stmt = sl.statement
        if value_tag == "owner" and isinstance(sl.flagged, ast.Attribute):
            wrap_expr(sl, sl.flagged.value, "owner")
        elif value_tag == "value" and isinstance(stmt, (ast.AugAssign, ast.Assign)):
            wrap_expr(sl, stmt.value, "value")
        elif value_tag == "cm" and isinstance(stmt, ast.With):
            stmt.body = [ast.Pass()]
        wrap_statement(sl, stmt, "flag")
        return [finish(sl.module)]
    return instrument


def _on_thunk(sl: Slice) -> Optional[list[ast.Module]]:
    """The flagged expression becomes `_tl_thunk('flag', lambda: expr)`: the worker may run
    it again under a profiler."""
    if not isinstance(sl.flagged, ast.expr):
        return None
    lam = ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[],
                                        kwarg=None, defaults=[]), body=sl.flagged)
    _replace(sl, sl.flagged, _call("_tl_thunk", ast.Constant("flag"), lam))
    return [finish(sl.module)]


def _leaf_inplace(sl: Slice) -> Optional[list[ast.Module]]:
    call = _flag_call(sl)
    if call is not None:
        wrap_call(call, "flag")
        return [finish(sl.module)]
    return _on_statement(None)(sl)


def _attribute_typo(sl: Slice) -> Optional[list[ast.Module]]:
    if isinstance(sl.flagged, ast.keyword):
        return _on_call(sl)
    return _on_statement("owner")(sl)


class _StripData(ast.NodeTransformer):
    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        return node.value if node.attr == "data" else node


def _without_data(stmt: ast.stmt) -> Optional[ast.stmt]:
    """The same write, tracked by autograd: `.data` dropped, under torch.no_grad()."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Attribute) \
            and stmt.targets[0].attr == "data":
        owner = stmt.targets[0].value
        new: ast.stmt = ast.Expr(ast.Call(func=ast.Attribute(_StripData().visit(owner), "copy_", ast.Load()),
                                          args=[_StripData().visit(stmt.value)], keywords=[]))
    elif isinstance(stmt, (ast.Assign, ast.AugAssign, ast.Expr)):
        new = _StripData().visit(stmt)
    else:
        return None
    no_grad = ast.Call(func=ast.Attribute(ast.Name("_tl_torch", ast.Load()), "no_grad", ast.Load()), args=[], keywords=[])
    return ast.With(items=[ast.withitem(context_expr=no_grad, optional_vars=None)], body=[new])


def _backward_statements(body: list[ast.stmt]) -> list[ast.stmt]:
    out = []
    for stmt in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(stmt, ast.stmt) and not isinstance(stmt, (ast.FunctionDef, ast.ClassDef)) and any(
                isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "backward"
                for n in ast.walk(stmt)) and not _is_block(stmt):
            out.append(stmt)
    return out


def _is_block(stmt: ast.stmt) -> bool:
    return any(isinstance(getattr(stmt, f, None), list) and getattr(stmt, f) for f in ("body", "orelse"))


def _data_write_before_backward(sl: Slice) -> Optional[list[ast.Module]]:
    """Run A as written; run B with the write tracked by autograd. Both stop after the
    first backward pass that follows the write."""
    import copy

    for node in ast.walk(sl.module):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "backward":
            wrap_call(node, "backward")
    import copy as _copy
    tracked = _without_data(_copy.deepcopy(sl.statement))  # bounded: check_shape ran on the slice
    if tracked is None:
        return None
    block = _block_of(sl, sl.statement)
    at = next(i for i, s in enumerate(block) if s is sl.statement)
    mark = ast.Expr(_call("_tl_mark", ast.Constant("flag")))
    block.insert(at + 1, mark)
    written = copy.deepcopy(sl.module)  # bounded: check_shape ran on this module
    block[at] = tracked
    return [finish(written), finish(sl.module)]


def _mode_at_backward(sl: Slice) -> Optional[list[ast.Module]]:
    """Mark the flagged `model.eval()`; the run stops at the next backward pass, where the
    worker reads every module's `training` flag."""
    for node in ast.walk(sl.module):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "backward":
            wrap_call(node, "backward")
    block = _block_of(sl, sl.statement)
    at = next(i for i, s in enumerate(block) if s is sl.statement)
    block.insert(at + 1, ast.Expr(_call("_tl_mark", ast.Constant("flag"))))
    return [finish(sl.module)]


def _construct(sl: Slice) -> Optional[list[ast.Module]]:
    assert isinstance(sl.statement, ast.ClassDef)
    call = _call("_tl_call", ast.Constant("flag"), ast.Name(sl.statement.name, ast.Load()))
    sl.module.body.append(ast.Expr(call))
    return [finish(sl.module)]


def _self_attribute(sl: Slice) -> dict[str, str]:
    node = sl.flagged
    return {"attribute": node.attr} if isinstance(node, ast.Attribute) else {}


# Slice shapes, by the name a rule's `evidence.slice` gives.
SLICES: dict[str, SliceRule] = {
    "call": SliceRule(_on_call),
    "call-twice-with-grads": SliceRule(_on_call, stop="flag*2", grads=True),
    "call-with-grads": SliceRule(_on_call, grads=True),
    "construct-and-read-attribute": SliceRule(_construct, construct=True, observe=_self_attribute),
    "construct": SliceRule(_construct, construct=True),
    "mode-at-backward": SliceRule(_mode_at_backward, stop="backward", extra_seed=_backward_statements),
    "data-write-before-backward": SliceRule(_data_write_before_backward, stop="backward", extra_seed=_backward_statements),
    "leaf-inplace": SliceRule(_leaf_inplace),
    "statement-value": SliceRule(_on_statement("value")),
    "with-statement": SliceRule(_on_statement("cm")),
    "attribute-typo": SliceRule(_attribute_typo),
    "thunk": SliceRule(_on_thunk),
    "target-of-consumer": SliceRule(_on_consumer(1, "target", None), related=_consumer(1, "target")),
    "input-of-consumer": SliceRule(_on_consumer(0, "input", "act"), related=_consumer(0, "input")),
}
