"""TL106: requires_grad=True on an integer tensor."""

from __future__ import annotations

import ast

from torchlint.analysis.torch_api import is_int_dtype
from torchlint.checker import FileContext
from torchlint.rules.base import Evidence, Rule, Violation, keyword, literal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional

_INT_DEFAULT_FACTORIES = frozenset({"torch.randint", "torch.randperm"})

def _all_ints(value: object) -> bool:
    if isinstance(value, bool):
        return True
    if isinstance(value, int):
        return True
    if isinstance(value, (list, tuple)):
        return len(value) > 0 and all(_all_ints(v) for v in value)
    return False


# -- evidence (runs only in the --verify worker: see CONTRIBUTING.md) ----------------------
def probe_integer_requires_grad(params: dict, device: str) -> tuple[str, str]:
    import torch
    from _evidence import first_line, raises

    exc = raises(lambda: torch.tensor([1, 2, 3], device=device, requires_grad=True))  # noqa: TL106 - the hazard, on purpose
    if exc is not None and "floating point" in str(exc):
        return "confirmed", first_line(exc)
    return "not-reproduced", f"no error ({exc!r})"


def judge_integer_requires_grad(facts: dict, runs: list) -> Optional[tuple[str, str]]:
    from _evidence import describe, expect_raise, says

    return expect_raise(runs, says("floating point"), "the call",
                        lambda rec: f"the call created {describe(rec.get('value'))}")


class IntegerTensorRequiresGrad(Violation):
    why: str  # what makes the tensor an integer one
    help = "Use a float dtype (`dtype=torch.float32`, or float literals)"

    def message(self) -> str:
        return f"`requires_grad=True` on an integer tensor raises: {self.why}"


class IntegerRequiresGrad(Rule):
    """## What it does
    Flags a tensor created with integer data or an integer dtype and `requires_grad=True`:
    `torch.tensor([1, 2, 3], requires_grad=True)`, `torch.arange(10, requires_grad=True)`,
    `torch.zeros(4, dtype=torch.long, requires_grad=True)`, `torch.randint(...)`,
    `torch.full(shape, 7, requires_grad=True)`. Float literals, float dtypes and
    `torch.zeros/ones/randn/linspace` without an integer dtype are not flagged.

    ## Why is this bad?
    Only floating point and complex tensors can have gradients. torch raises at creation:

    ```
    RuntimeError: Only Tensors of floating point and complex dtype can require gradients
    ```

    `torch.tensor` infers int64 from integer literals, which is easy to miss.

    ## Example
    ```python
    w = torch.tensor([1, 2, 3], requires_grad=True)
    ```

    ## Use instead
    ```python
    w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    # or
    w = torch.tensor([1, 2, 3], dtype=torch.float32, requires_grad=True)
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [torch.tensor](https://pytorch.org/docs/stable/generated/torch.tensor.html)
    - [Autograd mechanics](https://pytorch.org/docs/stable/notes/autograd.html)
    """

    code = "TL106"
    name = "integer-requires-grad"
    summary = "requires_grad=True on a tensor with an integer dtype"
    severity = "error"
    tags = ("correctness", "autograd", "dtype")
    requires_text = ('requires_grad',)
    precision = "very-high"
    evidence = Evidence(generic_probe=True, probe=probe_integer_requires_grad, slice="call", judge=judge_integer_requires_grad,
                        crash=r"Only Tensors of floating point and complex dtype can require gradients")

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        rg = keyword(node, "requires_grad")
        if rg is None or literal(rg.value) is not True:
            return
        name = ctx.call_name(node)
        if name is None or not name.startswith("torch."):
            return
        dtype_kw = keyword(node, "dtype")
        why = self._integer_reason(name, node, dtype_kw, ctx)
        if why:
            self.report(node, IntegerTensorRequiresGrad(why=why))

    def _integer_reason(self, name: str, node: ast.Call, dtype_kw: Optional[ast.keyword],
                        ctx: FileContext) -> Optional[str]:
        if dtype_kw is not None:
            if is_int_dtype(dtype_kw.value, ctx):
                return f"dtype is `{ast.unparse(dtype_kw.value)[:30]}`"
            return None
        if name in ("torch.tensor", "torch.as_tensor") and node.args and _all_ints(literal(node.args[0])):
            return "integer data gives int64"
        if name == "torch.arange" and node.args and all(_all_ints(literal(a)) for a in node.args):
            return "integer arguments give int64"
        if name in _INT_DEFAULT_FACTORIES:
            return f"`{name}` returns int64"
        if name in ("torch.full",) and len(node.args) >= 2 and _all_ints(literal(node.args[1])) \
                and not isinstance(literal(node.args[1]), bool):
            return "an integer fill value gives int64"
        return None


