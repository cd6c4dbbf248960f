"""TL108: `with torch.no_grad:` without parentheses."""

from __future__ import annotations

import ast

from torchlint.checker import FileContext
from torchlint.edits import end_of, insert_at, make_fix
from torchlint.rules.base import Evidence, Rule, Violation

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional

_MODES = ("torch.no_grad", "torch.enable_grad", "torch.inference_mode", "torch.set_grad_enabled")


# -- evidence (runs only in the --verify worker: see CONTRIBUTING.md) ----------------------
def probe_grad_mode_not_called(params: dict, device: str) -> tuple[str, str]:
    import torch
    from _evidence import first_line, raises

    cls: Any = getattr(torch, params.get("mode", "no_grad"), torch.no_grad)

    def run() -> None:
        with cls:
            pass
    exc = raises(run)
    if isinstance(exc, (TypeError, AttributeError)):
        return "confirmed", first_line(exc)
    return "not-reproduced", "the class worked as a context manager"


def judge_grad_mode_not_called(facts: dict, runs: list) -> Optional[tuple[str, str]]:
    from _evidence import expect_raise

    return expect_raise(runs, lambda exc: isinstance(exc, (TypeError, AttributeError)), "entering the with-statement",
                        lambda rec: "the object worked as a context manager")


class GradModeClassAsContext(Violation):
    mode: str  # the expression as written, e.g. `torch.no_grad`

    def message(self) -> str:
        return f"`with {self.mode}:` raises: the class is not a context manager"

    def help_text(self) -> str:
        return f"Call it: `with {self.mode}():`"


class GradModeNotCalled(Rule):
    """## What it does
    Flags `with torch.no_grad:`, `with torch.enable_grad:`, `with torch.inference_mode:` and
    `with torch.set_grad_enabled:`, that is, the class instead of an instance.

    ## Why is this bad?
    These are classes; `with` needs an instance. torch raises at run time:

    ```
    TypeError: 'type' object does not support the context manager protocol
    ```

    (A bare `@torch.no_grad` *decorator* is valid since torch 2.0 and is not flagged.)

    ## Example
    ```python
    with torch.no_grad:
        preds = model(x)
    ```

    ## Use instead
    ```python
    with torch.no_grad():
        preds = model(x)
    ```

    ## Fix safety
    Safe: adding `()` is the only way the `with` statement can run; the code raised
    `TypeError` before.

    ## References
    - [torch.no_grad](https://pytorch.org/docs/stable/generated/torch.no_grad.html)
    """

    code = "TL108"
    name = "grad-mode-not-called"
    summary = "Grad-mode context manager used without calling it"
    severity = "error"
    tags = ("correctness", "autograd")
    requires_text = ('no_grad', 'enable_grad', 'inference_mode', 'set_grad_enabled')
    precision = "very-high"
    evidence = Evidence(probe=probe_grad_mode_not_called, slice="with-statement", judge=judge_grad_mode_not_called,
                        crash=r"does not support the context manager protocol|object has no attribute '__enter__'")

    def _check(self, node: ast.AST, ctx: FileContext) -> None:
        for item in node.items:  # type: ignore[attr-defined]
            expr = item.context_expr
            if isinstance(expr, (ast.Name, ast.Attribute)):
                name = ctx.qualname(expr)
                if name in _MODES:
                    short = name.rsplit(".", 1)[1]
                    self.report(expr, GradModeClassAsContext(mode=ast.unparse(expr)[:40]), params={"mode": short},
                                fix=make_fix("Call it: add `()`", [insert_at(end_of(ctx.source, expr), "()")]))

    visit_With = _check
    visit_AsyncWith = _check
