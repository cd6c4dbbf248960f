"""TL805: `torch.tensor(list_of_ndarrays)`, which torch itself warns is extremely slow."""

from __future__ import annotations

import ast

from torchlint.analysis.dominance import reaches_here
from torchlint.analysis.imports import QualNames
from torchlint.checker import FileContext
from torchlint.rules.base import Evidence, Rule, Violation, dotted

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional

# numpy callables that return an ndarray (not a NumPy scalar such as `np.sum(x)` or `np.float32(x)`).
_ARRAY_FUNCTIONS = frozenset({
    "array", "asarray", "ascontiguousarray", "asfarray", "copy", "zeros", "ones", "empty", "full",
    "zeros_like", "ones_like", "empty_like", "full_like", "eye", "identity", "arange", "linspace",
    "stack", "concatenate", "vstack", "hstack", "dstack", "column_stack", "reshape", "transpose",
    "expand_dims", "squeeze", "flip", "fliplr", "flipud", "rot90", "pad", "tile", "repeat",
    "frombuffer", "fromfile", "clip", "array_split", "moveaxis", "swapaxes", "atleast_1d",
    "atleast_2d", "atleast_3d", "random.rand", "random.randn",
})
# `.numpy()` on these is usually a 0-d array (a loss or a metric), for which torch.tensor raises instead.
_SCALAR_HINTS = ("loss", "acc", "score", "metric")
_TORCH_TENSOR = QualNames({"torch.tensor"})


def probe_ndarray_list(params: dict, device: str) -> tuple[str, str]:
    """The --verify fact probe: does this torch warn when given a list of the element kind?"""
    import warnings

    import numpy as np
    import torch

    element = params.get("element", "ndarray")
    items = [np.zeros(3) for _ in range(4)] if element == "ndarray" else [[0.0, 0.0, 0.0] for _ in range(4)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.tensor(items)
    slow = [str(w.message) for w in caught if "numpy.ndarray" in str(w.message)]
    if slow:
        return "confirmed", f"torch.tensor(list of {element}) warned: {slow[0].splitlines()[0][:120]}"
    return "not-reproduced", f"torch.tensor(list of {element}) gave no warning on this torch"


def _is_ndarray(expr: ast.AST, ctx: FileContext) -> bool:
    """Does `expr` evaluate to a NumPy array: `np.zeros(...)`, `np.array(...)`, `t.cpu().numpy()`?"""
    if not isinstance(expr, ast.Call):
        return False
    func = expr.func
    if isinstance(func, ast.Attribute) and func.attr == "numpy" and not expr.args and not expr.keywords:
        return not any(h in dotted(func.value).lower() for h in _SCALAR_HINTS)
    name = ctx.call_name(expr)
    if name is None or not name.startswith("numpy."):
        return False
    short = name[len("numpy."):]
    if short.startswith("random."):
        return short in _ARRAY_FUNCTIONS and bool(expr.args)  # `np.random.rand()` is a float
    return short in _ARRAY_FUNCTIONS


def _appends(ctx: FileContext, list_name: str, start: int, end: int) -> Optional[list[ast.AST]]:
    """What is appended to `list_name` between two lines of this scope; None when the list is
    changed some other way (extend, insert, `+=`, item assignment) or handed to a call."""
    found: list[ast.AST] = []
    for node in ast.walk(ctx.scope):
        lineno = getattr(node, "lineno", 0)
        if not start < lineno < end or not isinstance(node, ast.Name) or node.id != list_name:
            continue
        parent = _parent_of(ctx, node)
        if isinstance(parent, ast.Attribute) and isinstance(_parent_of(ctx, parent), ast.Call):
            call = _parent_of(ctx, parent)
            if parent.attr == "append" and len(call.args) == 1 and not call.keywords:  # type: ignore[union-attr]
                found.append(call.args[0])  # type: ignore[union-attr]
                continue
            if parent.attr in ("__len__", "index", "count"):
                continue
            return None
        if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id == "len":
            continue
        return None  # any other use may put something else in the list
    return found


def _parent_of(ctx: FileContext, node: ast.AST) -> Optional[ast.AST]:
    key = ("tl805-parents", id(ctx.scope))
    parents: Optional[dict[int, ast.AST]] = ctx.memo.get(key)  # type: ignore[assignment]
    if parents is None:
        parents = {}
        for parent in ast.walk(ctx.scope):
            for child in ast.iter_child_nodes(parent):
                parents[id(child)] = parent
        ctx.memo[key] = parents
    return parents.get(id(node))


class TensorFromArrayList(Violation):
    source: str  # the list's name, or `[...]`
    help = "Stack the arrays first: `torch.from_numpy(np.stack(xs))`"

    def message(self) -> str:
        return f"`torch.tensor({self.source[:30]})` converts a list of NumPy arrays one element at a time"


class TensorFromNdarrayList(Rule):
    """## What it does
    Flags `torch.tensor(xs)` where `xs` is a list known to hold NumPy arrays: a list
    comprehension of NumPy calls (`[np.array(im) for im in images]`, `[t.cpu().numpy() for t in
    outs]`), or a list that starts empty and is only ever `.append`ed NumPy arrays before the call
    (`xs = []`, then `xs.append(np.load(...))` in a loop). A list built any other way, filled by
    `extend`, `+=`, item assignment, or passed to a function before the call, and arrays of
    unknown origin are not flagged.

    ## Why is this bad?
    `torch.tensor` converts a list of arrays element by element, through the Python sequence
    protocol. torch itself warns about it; checked on torch 2.13: `UserWarning: Creating a tensor
    from a list of numpy.ndarrays is extremely slow. Please consider converting the list to a
    single numpy.ndarray with numpy.array() before converting to a tensor.` On that torch, ten
    thousand arrays of 100 floats took about 4x as long as `torch.tensor(np.array(xs))`, and the
    gap grows with the array size. A list of 0-d arrays (`loss.numpy()`) raises `TypeError: len()
    of unsized object` instead.

    ## Example
    ```python
    features = []
    for image in images:
        features.append(np.asarray(image, dtype=np.float32))
    batch = torch.tensor(features)
    ```

    ## Use instead
    ```python
    batch = torch.from_numpy(np.stack(features))  # or torch.tensor(np.array(features))
    ```

    ## Fix safety
    No automatic fix: `np.stack` needs NumPy spelled in the file, and arrays of unequal shapes
    fail there differently.

    ## References
    - [torch.tensor](https://pytorch.org/docs/stable/generated/torch.tensor.html)
    - [torch.from_numpy](https://pytorch.org/docs/stable/generated/torch.from_numpy.html)
    """

    code = "TL805"
    name = "tensor-from-ndarray-list"
    summary = "`torch.tensor(list_of_ndarrays)` converts element by element (torch warns it is extremely slow)"
    severity = "warning"
    tags = ("performance", "numpy")
    precision = "high"
    requires_text = ("numpy",)
    evidence = Evidence(probe=probe_ndarray_list,
                        crash=r"len\(\) of unsized object")

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        if len(node.args) != 1 or ctx.call_among(node, _TORCH_TENSOR) is None:
            return
        arg = node.args[0]
        if isinstance(arg, ast.ListComp):
            holds = _is_ndarray(arg.elt, ctx)
        elif isinstance(arg, ast.Name):
            holds = self._list_of_arrays(arg, node.lineno, ctx)
        else:
            return
        if holds:
            shown = arg.id if isinstance(arg, ast.Name) else "[...]"
            self.report(node, TensorFromArrayList(source=shown),
                        params={"element": "ndarray"})

    def _list_of_arrays(self, name: ast.Name, lineno: int, ctx: FileContext) -> bool:
        binding = ctx.binding_before(name.id, lineno - 1)
        if binding is None or binding.index is not None or not isinstance(binding.node, ast.Assign) \
                or not reaches_here(ctx, binding.node):
            return False
        value = binding.value
        if isinstance(value, ast.ListComp):
            return _is_ndarray(value.elt, ctx)
        if not (isinstance(value, ast.List) and not value.elts) \
                and not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
                         and value.func.id == "list" and not value.args and not value.keywords):
            return False
        appended = _appends(ctx, name.id, binding.lineno, lineno)
        return appended is not None and bool(appended) and all(_is_ndarray(a, ctx) for a in appended)
