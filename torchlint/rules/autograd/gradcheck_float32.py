"""TL113: `torch.autograd.gradcheck` on float32 inputs, which reports false Jacobian mismatches."""

from __future__ import annotations

import ast

from torchlint.analysis.dominance import reaches_here
from torchlint.checker import FileContext
from torchlint.rules.base import Evidence, Rule, Violation, arg_or_keyword, has_star_kwargs, literal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional

_CHECKS = {
    "torch.autograd.gradcheck": "gradcheck", "torch.autograd.gradgradcheck": "gradgradcheck",
    "torch.autograd.gradcheck.gradcheck": "gradcheck", "torch.autograd.gradcheck.gradgradcheck": "gradgradcheck",
}
# Factories whose result has the default dtype (float32) when no dtype is given.
_FLOAT_FACTORIES = frozenset({"torch.randn", "torch.rand", "torch.zeros", "torch.ones", "torch.empty",
                              "torch.linspace", "torch.logspace", "torch.randn_like", "torch.rand_like"})
_SAME_DTYPE = frozenset({"requires_grad_", "detach", "clone", "cuda", "cpu", "contiguous", "view", "reshape",
                         "unsqueeze", "squeeze", "t", "transpose", "permute"})
_FLOAT32 = frozenset({"torch.float32", "torch.float"})
_TOLERANCES = ("eps", "atol", "rtol")


def probe_gradcheck_dtype(params: dict, device: str) -> tuple[str, str]:
    """The --verify fact probe: does gradcheck reject a correct gradient at this dtype?"""
    import warnings

    import torch
    from torch.autograd import gradcheck

    dtype = getattr(torch, str(params.get("dtype", "float32")))
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(5, generator=generator, dtype=dtype).requires_grad_()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the float32 warning itself is not the result
        passed = gradcheck(torch.sigmoid, (x,), raise_exception=False)
    if passed:
        return "not-reproduced", f"gradcheck(torch.sigmoid) passes with {dtype} inputs"
    return "confirmed", f"gradcheck(torch.sigmoid, <randn(5, dtype={dtype})>) fails: sigmoid's own gradient is correct"


class Float32Gradcheck(Violation):
    check: str  # `gradcheck` / `gradgradcheck` as called
    help = "Make the inputs float64 (`dtype=torch.float64` or `.double()`)"

    def message(self) -> str:
        return f"`{self.check}` on a float32 input fails on correct gradients (finite differences need float64)"


class GradcheckFloat32(Rule):
    """## What it does
    Flags `torch.autograd.gradcheck(fn, inputs)` and `gradgradcheck(...)` where an input that
    requires grad is known to be float32: a factory (`torch.randn`, `torch.rand`, `torch.zeros`,
    ...) without a `dtype` (float32 unless the file changes the default dtype) or with
    `dtype=torch.float32`, or a `.float()` conversion, directly or through a plain assignment.
    Calls that pass `eps`, `atol` or `rtol` (tolerances chosen for the dtype) are not flagged.

    ## Why is this bad?
    gradcheck compares the analytical gradient with finite differences taken with `eps=1e-6`;
    in float32 the differences lose most of their digits, so a correct gradient fails the
    check. Checked on torch 2.13: gradcheck warns `Input #0 requires gradient and is not a
    double precision floating point or complex. This check will likely fail if all the inputs
    are not of double precision floating point or complex.`, and
    `gradcheck(torch.sigmoid, (torch.randn(5, requires_grad=True),))` raises `GradcheckError:
    Jacobian mismatch` although sigmoid's gradient is right; the same input in float64 passes.
    A test that fails for the wrong reason gets loosened or deleted, and stops checking anything.

    ## Example
    ```python
    x = torch.randn(8, 4, requires_grad=True)
    assert torch.autograd.gradcheck(MyFunction.apply, (x,))
    ```

    ## Use instead
    ```python
    x = torch.randn(8, 4, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(MyFunction.apply, (x,))
    ```

    ## Fix safety
    No automatic fix: the input's dtype is set where it is made, often away from the call.

    ## References
    - [torch.autograd.gradcheck](https://pytorch.org/docs/stable/generated/torch.autograd.gradcheck.gradcheck.html)
    - [Gradcheck mechanics](https://pytorch.org/docs/stable/notes/gradcheck.html)
    """

    code = "TL113"
    name = "gradcheck-float32"
    summary = "`gradcheck`/`gradgradcheck` on float32 inputs reports false mismatches; use float64"
    severity = "warning"
    tags = ("correctness", "testing")
    precision = "high"
    requires_text = ("gradcheck",)
    evidence = Evidence(probe=probe_gradcheck_dtype)

    def setup(self, ctx: FileContext) -> None:
        self._default_changed: Optional[bool] = None

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        check = _CHECKS.get(ctx.call_name(node) or "")
        if check is None or has_star_kwargs(node) or any(k.arg in _TOLERANCES for k in node.keywords):
            return
        inputs = arg_or_keyword(node, 1, "inputs")
        if inputs is None:
            return
        items = inputs.elts if isinstance(inputs, (ast.Tuple, ast.List)) else [inputs]
        for item in items:
            if self._float32(item, ctx, node.lineno) and _requires_grad(item, ctx, node.lineno):
                self.report(node, Float32Gradcheck(check=check), params={"dtype": "float32"})
                return

    def _default_is_float32(self, ctx: FileContext) -> bool:
        if self._default_changed is None:
            self._default_changed = any(
                isinstance(n, ast.Call) and (ctx.qualname(n.func) or "").startswith(
                    ("torch.set_default_dtype", "torch.set_default_tensor_type"))
                for n in ast.walk(ctx.tree))
        return not self._default_changed

    def _float32(self, expr: ast.AST, ctx: FileContext, lineno: int, depth: int = 0) -> bool:
        if depth > 4:
            return False
        if isinstance(expr, ast.Name):
            value = _assigned(expr, ctx, lineno, depth)
            return value is not None and self._float32(value, ctx, getattr(value, "lineno", lineno), depth + 1)
        if not isinstance(expr, ast.Call):
            return False
        name = ctx.call_name(expr)
        if name in _FLOAT_FACTORIES:
            dtype = next((k.value for k in expr.keywords if k.arg == "dtype"), None)
            if dtype is None:
                return not name.endswith("_like") and self._default_is_float32(ctx)
            return ctx.qualname(dtype) in _FLOAT32
        func = expr.func
        if not isinstance(func, ast.Attribute):
            return False
        if func.attr == "float" and not expr.args:
            return True
        if func.attr == "to" and not expr.keywords and all(ctx.qualname(a) is None for a in expr.args):
            return self._float32(func.value, ctx, lineno, depth + 1)  # `.to(device)`: dtype unchanged
        return func.attr in _SAME_DTYPE and self._float32(func.value, ctx, lineno, depth + 1)


def _assigned(name: ast.Name, ctx: FileContext, lineno: int, depth: int) -> Optional[ast.AST]:
    binding = ctx.binding_before(name.id, lineno - 1)
    if binding is None or binding.index is not None or not isinstance(binding.node, ast.Assign) \
            or (depth == 0 and not reaches_here(ctx, binding.node)):
        return None
    return binding.value


def _requires_grad(expr: ast.AST, ctx: FileContext, lineno: int, depth: int = 0) -> bool:
    """Does `expr` require grad: `requires_grad=True`, `.requires_grad_()`, through assignments?"""
    if depth > 4:
        return False
    if isinstance(expr, ast.Name):
        value = _assigned(expr, ctx, lineno, depth)
        return value is not None and _requires_grad(value, ctx, getattr(value, "lineno", lineno), depth + 1)
    if not isinstance(expr, ast.Call):
        return False
    flag = next((k.value for k in expr.keywords if k.arg == "requires_grad"), None)
    if flag is not None:
        return literal(flag) is True
    func = expr.func
    if isinstance(func, ast.Attribute):
        if func.attr == "requires_grad_":
            return not expr.args or literal(expr.args[0]) is True
        if func.attr in ("float", "to", "cuda", "view", "reshape", "t", "transpose", "permute", "unsqueeze", "squeeze"):
            return _requires_grad(func.value, ctx, lineno, depth + 1)  # a differentiable op keeps it
    return False
