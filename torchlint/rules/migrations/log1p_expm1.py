"""TL905: `torch.log(1 + x)` and `torch.exp(x) - 1` instead of `torch.log1p` / `torch.expm1`."""

from __future__ import annotations

import ast

from torchlint.checker import FileContext
from torchlint.edits import make_fix, replace, text_of
from torchlint.rules.base import Evidence, Rule, Violation

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional


def _is_one(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) in (int, float) and node.value == 1


def _plus_one_operand(node: ast.AST) -> Optional[ast.AST]:
    """`x` for `1 + x` or `x + 1`."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        if _is_one(node.left) and not _is_one(node.right):
            return node.right
        if _is_one(node.right) and not _is_one(node.left):
            return node.left
    return None


class LogOfOnePlus(Violation):
    help = "Use `torch.log1p(x)`"

    def message(self) -> str:
        return "`torch.log(1 + x)` loses every digit of a small `x` (float32: 0 below ~6e-8)"


class ExpMinusOne(Violation):
    help = "Use `torch.expm1(x)`"

    def message(self) -> str:
        return "`torch.exp(x) - 1` loses every digit of a small `x` (float32: 0 below ~6e-8)"


class Log1pExpm1(Rule):
    """## What it does
    Flags `torch.log(1 + x)` (or `x + 1`) and `torch.exp(x) - 1`.

    Off by default (enable with `--extend-select TL905`): whether the lost digits matter depends
    on the magnitude of `x`, which a linter cannot see. On the training corpus of 24 projects
    all 4 findings were harmless: integer durations (`torch.log(dur + 1)`,
    `torch.round(torch.exp(log_dur) - 1)` in fairseq's text-to-speech models), where `x` is never
    small and the result is rounded anyway. That is below the 90% true-positive bar for a
    default-on rule.

    ## Why is this bad?
    For small `x`, `1 + x` rounds to 1 before the logarithm sees it, and `exp(x)` rounds to 1
    before the subtraction: every digit of `x` is lost. On torch 2.13 in float32,
    `torch.log(1 + torch.tensor(1e-8))` is `0.0` while `torch.log1p(torch.tensor(1e-8))` is
    `1e-08`; the same holds for `exp(x) - 1` against `expm1(x)`. The dedicated functions are exact
    there.

    ## Example
    ```python
    log_prob = torch.log(1 + torch.exp(-z))
    ```

    ## Use instead
    ```python
    log_prob = torch.log1p(torch.exp(-z))
    ```

    ## Fix safety
    Safe: `log1p(x)` and `expm1(x)` compute `log(1 + x)` and `exp(x) - 1`, only without the
    rounding (results differ in the last bits, towards the exact value). Calls through a bare
    imported `log`/`exp`, and calls with keyword arguments, are not rewritten.

    ## References
    - [torch.log1p](https://pytorch.org/docs/stable/generated/torch.log1p.html)
    - [torch.expm1](https://pytorch.org/docs/stable/generated/torch.expm1.html)
    - TorchFix TOR106, TOR107
    """

    code = "TL905"
    name = "log1p-expm1"
    summary = "`torch.log(1 + x)` / `torch.exp(x) - 1` lose precision; use log1p / expm1"
    peer_checks = {"TOR106": "covered; off by default: 0 of 4 findings mattered on the training corpus (integer durations)", "TOR107": "covered, as TOR106"}  # rules_docs/peer-parity.md
    severity = "info"
    # Off by default: on the training corpus all 4 findings were integer durations whose
    # result is rounded afterwards (fairseq TTS), where the lost precision cannot matter.
    default_enabled = False
    tags = ("numerics",)
    precision = "very-high"
    requires_text = ("log", "exp")
    evidence = Evidence(reason=("a precision claim shown once on torch 2.13 (float32 x = 1e-8: log(1 + x) is 0.0, "
                                "log1p(x) is 1e-08); the doc quotes it"))

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        if len(node.args) != 1 or node.keywords or ctx.call_name(node) != "torch.log":
            return
        x = _plus_one_operand(node.args[0])
        if x is None:
            return
        func = text_of(ctx.source, node.func)
        new = f"{func}1p({text_of(ctx.source, x)})"
        # Fixed only when spelled through the module: a bare imported `log` has no `log1p` beside it.
        fix = make_fix("Use `torch.log1p`", [replace(ctx.source, node, new)]) \
            if isinstance(node.func, ast.Attribute) else None
        self.report(node, LogOfOnePlus(), fix=fix)

    def visit_BinOp(self, node: ast.BinOp, ctx: FileContext) -> None:
        if not isinstance(node.op, ast.Sub) or not _is_one(node.right):
            return
        call = node.left
        if not isinstance(call, ast.Call) or len(call.args) != 1 or call.keywords \
                or not isinstance(call.func, ast.Attribute) or ctx.call_name(call) != "torch.exp":
            return
        func = text_of(ctx.source, call.func)
        new = f"{func[:-3]}expm1({text_of(ctx.source, call.args[0])})"
        self.report(node, ExpMinusOne(),
                    fix=make_fix("Use `torch.expm1`", [replace(ctx.source, node, new)]))
