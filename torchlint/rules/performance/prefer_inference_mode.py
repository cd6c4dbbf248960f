"""TL803 (off by default): no_grad where inference_mode would do."""

from __future__ import annotations

import ast

from torchlint.analysis.scopes import grad_mode_of, iter_scope
from torchlint.checker import FileContext
from torchlint.rules.base import Evidence, Rule, Violation


def _needs_autograd_later(fn: ast.AST) -> bool:
    """Conservative: results stored on objects, in-place updates, or autograd calls mean
    the tensors may meet autograd again (inference tensors cannot)."""
    for node in iter_scope(fn.body):  # type: ignore[attr-defined]
        if isinstance(node, ast.AugAssign):
            return True
        if isinstance(node, ast.Assign) and any(isinstance(t, (ast.Attribute, ast.Subscript)) for t in node.targets):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
                node.func.attr.endswith("_") or node.func.attr in ("backward", "requires_grad_", "append", "extend")):
            return True
        if isinstance(node, ast.Attribute) and node.attr in ("requires_grad", "grad"):
            return True
    return False


class NoGradWhereInferenceMode(Violation):
    help = "Use `torch.inference_mode()`"

    def message(self) -> str:
        return "`torch.no_grad()` where `torch.inference_mode()` would be faster"


class PreferInferenceMode(Rule):
    """## What it does
    Flags a function decorated with `@torch.no_grad()`, or whose whole body is one
    `with torch.no_grad():` block, when its results do not appear to meet autograd again (it does
    not store results on objects, update tensors in place, or touch `.grad`/`requires_grad`). Off
    by default: whether results are reused with autograd cannot be known statically.

    ## Why is this bad?
    `torch.inference_mode()` disables view tracking and version counter bumps in addition to
    gradient recording, so pure inference code runs faster. Tensors created under it cannot be
    used in autograd later, which is why this is only a suggestion.

    `--verify` reports this rule as `skipped`: a speed suggestion; no wrong result to show.

    ## Example
    ```python
    @torch.no_grad()
    def predict(model, x):
        return model(x).argmax(-1)
    ```

    ## Use instead
    ```python
    @torch.inference_mode()
    def predict(model, x):
        return model(x).argmax(-1)
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [torch.inference_mode](https://pytorch.org/docs/stable/generated/torch.inference_mode.html)
    - [Autograd: inference mode](https://pytorch.org/docs/stable/notes/autograd.html#inference-mode)
    """

    code = "TL803"
    name = "prefer-inference-mode"
    summary = "torch.no_grad() where torch.inference_mode() is faster"
    severity = "info"
    default_enabled = False
    tags = ("performance",)
    requires_text = ('no_grad',)
    evidence = Evidence(reason='a speed suggestion; no wrong result to show')
    precision = "medium"

    def _check(self, fn: ast.AST, ctx: FileContext) -> None:
        site = None
        for deco in fn.decorator_list:  # type: ignore[attr-defined]
            mode = grad_mode_of(deco, ctx.imports)
            if mode is not None and mode[1] == "torch.no_grad":
                site = deco
        body = fn.body  # type: ignore[attr-defined]
        stmts = [s for s in body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        if site is None and len(stmts) == 1 and isinstance(stmts[0], ast.With):
            for item in stmts[0].items:
                mode = grad_mode_of(item.context_expr, ctx.imports)
                if mode is not None and mode[1] == "torch.no_grad":
                    site = item.context_expr
        if site is None or _needs_autograd_later(fn):
            return
        self.report(site, NoGradWhereInferenceMode())

    visit_FunctionDef = _check
    visit_AsyncFunctionDef = _check
