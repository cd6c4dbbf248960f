"""TL909: `loss.data[0]` on a 0-dim tensor: an IndexError since torch 0.5."""

from __future__ import annotations

import ast

from torchlint.checker import FileContext
from torchlint.edits import make_fix, replace, text_of
from torchlint.rules.base import Evidence, Rule, Violation, keyword, literal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional

_REDUCTIONS = frozenset({"sum", "mean", "norm", "prod", "max", "min", "std", "var"})
_LOSS_WORDS = ("loss", "criterion", "crit")


def _scalar_source(value: ast.AST, ctx: FileContext) -> Optional[str]:
    """Why `value` is a 0-dim tensor, or None when that is not certain."""
    if not isinstance(value, ast.Call):
        return None
    func = value.func
    if isinstance(func, ast.Attribute) and func.attr in _REDUCTIONS and not value.args and not value.keywords:
        return f"`.{func.attr}()` with no `dim`"
    reduction = keyword(value, "reduction")
    if reduction is not None and literal(reduction.value) == "none":
        return None
    if any(kw.arg in ("reduce", "size_average") for kw in value.keywords):
        return None  # legacy flags may keep the per-element losses
    name = ctx.call_name(value)
    if name is not None and name.startswith("torch.nn.functional.") and (
            name.endswith("_loss") or name.endswith("cross_entropy")):
        return f"`{name.rsplit('.', 1)[1]}` with the default reduction"
    called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if any(word in called.lower() for word in _LOSS_WORDS):
        return f"a loss (`{called}(...)`)"
    return None


class DataIndexOnScalarTensor(Violation):
    tensor: str  # as written; named in the message when short
    why: str  # what makes it 0-dim

    def message(self) -> str:
        if len(self.tensor) <= 30:
            return f"`{self.tensor}.data[0]` raises IndexError: it is 0-dim ({self.why})"
        return f"`.data[0]` raises IndexError on this 0-dim tensor ({self.why})"

    def help_text(self) -> str:
        return f"Use `{self.tensor}.item()`" if len(self.tensor) <= 30 else "Use `.item()`"


class DataIndexOnScalar(Rule):
    """## What it does
    Flags `x.data[0]` where `x` is certainly a 0-dim tensor: the value of a loss call with the
    default reduction (`criterion(out, y)`, `F.nll_loss(out, y)`, any call whose name contains
    `loss` or `criterion`), or of a full reduction with no `dim` (`.sum()`, `.mean()`, ...).
    Losses with `reduction="none"` or the legacy `reduce=`/`size_average=` flags are not flagged.

    ## Why is this bad?
    In torch 0.3 a loss was a one-element vector and `loss.data[0]` read its value; tutorials
    still show it. Since 0.4 a loss is 0-dim, and since 0.5 indexing it raises (checked on torch
    2.13):

    ```
    IndexError: invalid index of a 0-dim tensor. Use `tensor.item()` in Python ...
    ```

    ## Example
    ```python
    loss = criterion(output, target)
    total += loss.data[0]
    ```

    ## Use instead
    ```python
    loss = criterion(output, target)
    total += loss.item()
    ```

    ## Fix safety
    Safe: `.item()` returns the Python number that `.data[0]` returned in torch 0.3; the old
    code raises on every current torch.

    ## References
    - [PyTorch 0.4 migration guide](https://pytorch.org/blog/pytorch-0_4_0-migration-guide/)
    - [torch.Tensor.item](https://pytorch.org/docs/stable/generated/torch.Tensor.item.html)
    """

    code = "TL909"
    name = "data-index-on-scalar"
    summary = "`loss.data[0]` on a 0-dim loss raises IndexError; use `loss.item()`"
    severity = "error"
    tags = ("migration", "correctness")
    precision = "high"
    requires_text = (".data[0]",)
    evidence = Evidence(reason=("checked once on torch 2.13: indexing a 0-dim tensor's `.data` raises IndexError "
                                "(tests/test_migrations.py repeats it when torch is installed)"),
                        crash=r"invalid index of a 0-dim tensor")

    def visit_Subscript(self, node: ast.Subscript, ctx: FileContext) -> None:
        data = node.value
        if not (isinstance(data, ast.Attribute) and data.attr == "data" and isinstance(node.ctx, ast.Load)):
            return
        index = node.slice
        if not (isinstance(index, ast.Constant) and index.value == 0 and type(index.value) is int):
            return
        owner = data.value
        if isinstance(owner, ast.Name):
            value = ctx.value_before(owner, node.lineno, module_fallback=True)
            why = _scalar_source(value, ctx) if value is not None else None
        else:
            why = _scalar_source(owner, ctx)
        if why is None:
            return
        text = text_of(ctx.source, owner)
        self.report(node, DataIndexOnScalarTensor(tensor=text, why=why),
                    fix=make_fix(f"Use `{text}.item()`", [replace(ctx.source, node, f"{text}.item()")]))
