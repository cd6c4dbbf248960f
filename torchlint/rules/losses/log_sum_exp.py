"""TL406: `torch.log(torch.sum(torch.exp(x)))` instead of `torch.logsumexp`."""

from __future__ import annotations

import ast

from torchlint.analysis.torch_api import TORCH_LOG
from torchlint.checker import FileContext
from torchlint.edits import has_comment, make_fix, module_alias, replace, text_of
from torchlint.records import Fix
from torchlint.rules.base import Evidence, Rule, Violation, calls_ending

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional


def probe_log_sum_exp(params: dict, device: str) -> tuple[str, str]:
    """The --verify fact probe: does the naive form overflow where logsumexp does not, at the
    magnitude given (`scale`: the largest |x|)?"""
    import torch

    scale = float(params.get("scale", 100.0))
    x = torch.tensor([scale, scale - 1.0, -scale], dtype=torch.float32)
    naive = torch.log(torch.sum(torch.exp(x)))  # noqa: TL406 - the hazard, on purpose
    stable = torch.logsumexp(x, dim=0)
    if not torch.isfinite(naive) and torch.isfinite(stable):
        return "confirmed", f"float32 log(sum(exp(x))) at |x| = {scale:g} is {naive.item()}; logsumexp gives {stable.item():.4f}"
    return "not-reproduced", f"float32 log(sum(exp(x))) at |x| = {scale:g} is finite ({naive.item():.4f})"


def _exp_operand(node: ast.AST, ctx: FileContext) -> Optional[ast.AST]:
    """`x` for `torch.exp(x)` or `x.exp()`."""
    if not isinstance(node, ast.Call) or node.keywords:
        return None
    func = node.func
    if len(node.args) == 1 and ctx.call_name(node) == "torch.exp":
        return node.args[0]
    if not node.args and isinstance(func, ast.Attribute) and func.attr == "exp" and ctx.qualname(func.value) is None:
        return func.value
    return None


def _sum_parts(node: ast.AST, ctx: FileContext) -> Optional[tuple[ast.expr, list[ast.expr], list[ast.keyword]]]:
    """(the summed expression, the other arguments, the keywords) of `torch.sum(e, ...)` or `e.sum(...)`."""
    if not isinstance(node, ast.Call):
        return None
    if node.args and ctx.call_name(node) == "torch.sum":
        return node.args[0], node.args[1:], node.keywords
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr == "sum" and ctx.qualname(func.value) is None:
        return func.value, list(node.args), node.keywords
    return None


def _shifted(x: ast.AST, lineno: int, ctx: FileContext) -> bool:
    """`x - m` (the hand-stabilised form), directly or through a name assigned it."""
    if isinstance(x, ast.Name):
        value = ctx.value_before(x, lineno)
        x = value if value is not None else x
    return isinstance(x, ast.BinOp) and isinstance(x.op, ast.Sub)


class UnstableLogSumExp(Violation):
    help = "Use `torch.logsumexp(x, dim)`"

    def message(self) -> str:
        return "`log(sum(exp(x)))` is inf when an `exp` overflows, and -inf when all underflow"


class LogSumExp(Rule):
    """## What it does
    Flags `torch.log(torch.sum(torch.exp(x)))` and its method spellings (`x.exp().sum(1).log()`,
    `torch.log(x.exp().sum(dim=-1))`). An argument that subtracts something first
    (`torch.exp(x - x.max())`, the hand-stabilised form, also through a name assigned
    `x - m`) is not flagged, nor is the body of a function implementing `logsumexp`.

    ## Why is this bad?
    `exp` overflows long before the log would bring the value back: in float32 `exp(x)` is `inf`
    for `x` above about 88 (in float16 above about 11), and when every `exp(x)` underflows to 0
    (log-probabilities of long sequences, large negative scores) the log is `-inf`. Either way the
    loss and its gradients become `inf`/`NaN`. `torch.logsumexp` subtracts the maximum first and is
    exact in both cases. Checked on torch 2.13 (float32): for `x = [100, 100]` the naive form is
    `inf` and `torch.logsumexp(x, 0)` is `100.6931`; for `x = [-200, -200]` it is `-inf` against
    `-199.3069`.

    ## Example
    ```python
    log_z = torch.log(torch.sum(torch.exp(scores), dim=1))
    ```

    ## Use instead
    ```python
    log_z = torch.logsumexp(scores, dim=1)
    ```

    ## Fix safety
    Safe where offered: `torch.logsumexp(x, dim, keepdim=...)` computes the same value (finite
    where the naive form overflowed) with the same shape. Offered only when the sum names its
    dimension (logsumexp has no all-dimensions default), takes no `dtype`, and `torch` is
    imported as a module in the file.

    ## References
    - [torch.logsumexp](https://pytorch.org/docs/stable/generated/torch.logsumexp.html)
    """

    code = "TL406"
    name = "log-sum-exp"
    summary = "`log(sum(exp(x)))` overflows to inf/-inf; use `torch.logsumexp`"
    peer_checks = {"W5514": "partly: `log(sum(exp(x)))`"}  # rules_docs/peer-parity.md
    severity = "warning"
    tags = ("numerics", "losses")
    precision = "high"
    requires_text = ("exp",)
    evidence = Evidence(probe=probe_log_sum_exp)

    @calls_ending(TORCH_LOG.lasts, ["log"])
    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        if node.keywords:
            return
        func = node.func
        if len(node.args) == 1 and ctx.call_among(node, TORCH_LOG) is not None:
            summed = node.args[0]
        elif not node.args and isinstance(func, ast.Attribute) and func.attr == "log" and ctx.qualname(func.value) is None:
            summed = func.value
        else:
            return
        parts = _sum_parts(summed, ctx)
        if parts is None:
            return
        x = _exp_operand(parts[0], ctx)
        if x is None or _shifted(x, node.lineno, ctx) or "logsumexp" in getattr(ctx.function, "name", ""):
            return  # stabilised by hand, or the implementation of logsumexp itself
        self.report(node, UnstableLogSumExp(), params={"scale": 100.0},
                    fix=self._fix(node, x, parts[1], parts[2], ctx))

    def _fix(self, node: ast.Call, x: ast.AST, args: list[ast.expr], keywords: list[ast.keyword],
             ctx: FileContext) -> Optional[Fix]:
        torch_name = module_alias(ctx.imports.aliases, "torch")
        if isinstance(node.func, ast.Attribute) and ctx.call_name(node) == "torch.log":
            torch_name = text_of(ctx.source, node.func.value)  # the spelling the line already uses
        if torch_name is None or has_comment(text_of(ctx.source, node)):
            return None
        dim = args[0] if args else next((k.value for k in keywords if k.arg == "dim"), None)
        keepdim = args[1] if len(args) > 1 else next((k.value for k in keywords if k.arg == "keepdim"), None)
        if dim is None or len(args) > 2 or any(k.arg not in ("dim", "keepdim") for k in keywords):
            return None
        text = f"{torch_name}.logsumexp({text_of(ctx.source, x)}, {text_of(ctx.source, dim)}"
        text += f", keepdim={text_of(ctx.source, keepdim)})" if keepdim is not None else ")"
        return make_fix("Use `torch.logsumexp`", [replace(ctx.source, node, text)])
