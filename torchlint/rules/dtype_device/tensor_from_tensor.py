"""TL210: `torch.tensor(existing_tensor)`, which torch warns about; `x.detach().clone()` is the copy."""

from __future__ import annotations

import ast

from torchlint.analysis.dominance import reaches_here
from torchlint.analysis.imports import QualNames
from torchlint.analysis.inference import TENSOR_FACTORIES, kind_of_annotation
from torchlint.checker import FileContext
from torchlint.edits import has_comment, make_fix, replace, text_of
from torchlint.rules.base import Evidence, Rule, Violation, calls_ending, dotted

# torch.* functions that always return one tensor (`torch.max(x, 1)` is a tuple, `torch.numel` an int).
_TENSOR_FUNCTIONS = TENSOR_FACTORIES | {
    "cat", "stack", "from_numpy", "matmul", "mm", "bmm", "einsum", "exp", "log", "sigmoid", "tanh",
    "relu", "softmax", "log_softmax", "abs", "sqrt", "clamp", "argmax", "argmin", "mean", "sum", "flatten",
    "squeeze", "unsqueeze", "reshape", "cumsum", "round", "floor", "ceil", "mul", "add", "sub", "div",
    "transpose", "permute", "clone", "detach",
}
# Tensor methods that return one tensor (not `.max(dim)` tuples, `.type()` strings or `.tolist()`).
_TENSOR_METHODS = frozenset({
    "float", "double", "half", "bfloat16", "long", "int", "bool", "to", "cuda", "cpu", "contiguous",
    "detach", "clone", "view", "reshape", "permute", "transpose", "squeeze", "unsqueeze", "flatten",
    "sum", "mean", "abs", "exp", "log", "sqrt", "softmax", "sigmoid", "argmax", "t", "mul", "add",
})
_ATOMS = (ast.Name, ast.Attribute, ast.Call, ast.Subscript)
_TORCH_TENSOR = QualNames({"torch.tensor"})


def probe_tensor_copy(params: dict, device: str) -> tuple[str, str]:
    """The --verify fact probe: does `torch.tensor(<source>)` warn on this torch?"""
    import warnings

    import torch

    source = torch.ones(3) if params.get("source", "tensor") == "tensor" else [1.0, 1.0, 1.0]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.tensor(source)
    copy = [str(w.message) for w in caught if "copy construct" in str(w.message)]
    if copy:
        return "confirmed", f"torch.tensor(<a tensor>) warned: {copy[0].splitlines()[0][:140]}"
    return "not-reproduced", f"torch.tensor(<a {params.get('source', 'tensor')}>) gave no warning on this torch"


def known_tensor(expr: ast.AST, ctx: FileContext, lineno: int, depth: int = 0) -> bool:
    """Is `expr` surely one tensor: a torch function that returns one, a tensor method on a
    known tensor, a name whose assignment reaching `lineno` is one, or a parameter annotated
    `torch.Tensor`?"""
    if depth > 4:
        return False
    if isinstance(expr, ast.Call):
        name = ctx.call_name(expr)
        if name is not None:
            return name.startswith("torch.") and name.count(".") == 1 and name[6:] in _TENSOR_FUNCTIONS
        func = expr.func
        return isinstance(func, ast.Attribute) and func.attr in _TENSOR_METHODS \
            and known_tensor(func.value, ctx, lineno, depth + 1)
    if isinstance(expr, ast.Name):
        binding = ctx.binding_before(expr.id, lineno - 1)
        if binding is None or binding.index is not None:
            return False
        if isinstance(binding.node, ast.arg):
            return kind_of_annotation(binding.annotation, ctx) == "tensor"
        if depth == 0 and not reaches_here(ctx, binding.node):
            return False  # assigned in another branch: the value here may be something else
        if isinstance(binding.node, ast.Assign) and binding.value is not None:
            return known_tensor(binding.value, ctx, binding.lineno, depth + 1)
    return False


class TensorOfTensor(Violation):
    source: str  # the tensor as written, shown when short
    help = "Use `x.detach().clone()` for a copy (`torch.as_tensor(x)` or `x` when none is needed)"

    def message(self) -> str:
        shown = self.source if len(self.source) <= 30 else "x"
        return f"`torch.tensor({shown})` copies a tensor and detaches it from the graph"


class TensorFromTensor(Rule):
    """## What it does
    Flags `torch.tensor(x)` where `x` is known to be a tensor: the result of a torch function
    that returns one, a tensor method on a known tensor, a name assigned one of those, or a
    parameter annotated `torch.Tensor`. Arguments of unknown type are not flagged (a list or a
    NumPy array is what `torch.tensor` is for), nor names whose tensor assignment sits in another
    branch (`if not isinstance(x, torch.Tensor): x = torch.tensor(x)` after an `if` that set it).

    ## Why is this bad?
    `torch.tensor` always copies and is meant for data (lists, NumPy arrays, numbers). Given a
    tensor, it copies it and silently detaches it from the autograd graph; checked on torch
    2.13, it warns: `UserWarning: To copy construct from a tensor, it is recommended to use
    sourceTensor.detach().clone() or sourceTensor.detach().clone().requires_grad_(True), rather
    than torch.tensor(sourceTensor).` Code that meant to keep the graph loses its gradient, and
    code that only wanted the value makes a copy it may not need (`torch.as_tensor(x)` or `x`
    itself).

    ## Example
    ```python
    scores = torch.softmax(logits, dim=-1)
    target = torch.tensor(scores)
    ```

    ## Use instead
    ```python
    target = scores.detach().clone()
    ```

    ## Fix safety
    Safe for `torch.tensor(x)` with no other argument: `x.detach().clone()` is the same copy
    (same dtype, device and memory format, `requires_grad=False`), without the warning. Calls
    with `dtype=`, `device=` or `requires_grad=` are not rewritten.

    ## References
    - [torch.tensor](https://pytorch.org/docs/stable/generated/torch.tensor.html)
    - [torch.Tensor.detach](https://pytorch.org/docs/stable/generated/torch.Tensor.detach.html)
    """

    code = "TL210"
    name = "tensor-from-tensor"
    summary = "`torch.tensor(existing_tensor)` copies and detaches (torch warns); use `x.detach().clone()`"
    severity = "warning"
    tags = ("correctness", "autograd")
    precision = "high"
    requires_text = ("tensor",)
    evidence = Evidence(probe=probe_tensor_copy)

    @calls_ending(_TORCH_TENSOR.lasts)
    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        if len(node.args) != 1 or isinstance(node.args[0], ast.Starred) or ctx.call_among(node, _TORCH_TENSOR) is None:
            return
        arg = node.args[0]
        if not known_tensor(arg, ctx, node.lineno):
            return
        fix = None
        if not node.keywords and not has_comment(text_of(ctx.source, node)):
            text = text_of(ctx.source, arg)
            text = text if isinstance(arg, _ATOMS) else f"({text})"
            fix = make_fix("Use `.detach().clone()`", [replace(ctx.source, node, f"{text}.detach().clone()")])
        self.report(node, TensorOfTensor(source=dotted(arg)),
                    params={"source": "tensor"}, fix=fix)
