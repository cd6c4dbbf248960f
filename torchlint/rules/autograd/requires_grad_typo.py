"""TL109: `require_grad` (missing s) instead of `requires_grad`."""

from __future__ import annotations

import ast

from torchlint.checker import FileContext
from torchlint.edits import Fix, edit, end_of, make_fix, start_of
from torchlint.rules.base import Evidence, Rule, Violation, dotted

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional

_TYPOS = frozenset({"require_grad", "requires_grads", "require_grads", "requiresgrad", "requires_gradient"})


# -- evidence (runs only in the --verify worker: see CONTRIBUTING.md) ----------------------
def probe_requires_grad_typo(params: dict, device: str) -> tuple[str, str]:
    import torch
    from _evidence import first_line, raises

    x = torch.zeros(3, device=device)
    x.require_grad = True  # type: ignore[attr-defined]  # noqa: TL109 - the hazard, on purpose
    exc = raises(lambda: torch.ones(3, require_grad=True))  # type: ignore[call-overload]  # noqa: TL109 - the hazard, on purpose
    if not x.requires_grad:
        kw = f"; as a keyword: {first_line(exc)}" if exc else ""
        return "confirmed", f"after `x.require_grad = True`, x.requires_grad is {x.requires_grad}{kw}"
    return "not-reproduced", "requires_grad was set"


def judge_requires_grad_typo(facts: dict, runs: list) -> Optional[tuple[str, str]]:
    import torch
    from _evidence import first_line, flag

    rec = flag(runs)
    if rec is None:
        return None
    exc = rec.get("exc")
    if exc is not None:
        if isinstance(exc, TypeError) and "require_grad" in str(exc):
            return "confirmed", f"the call raised {first_line(exc)}"
        return "error", f"the flagged line raised an unrelated {first_line(exc)}"
    owners = runs[0]["obs"].get("owner")
    owner = owners[0]["value"] if owners else None
    if isinstance(owner, torch.Tensor):
        if not owner.requires_grad:
            return "confirmed", f"after the assignment the tensor's requires_grad is {owner.requires_grad}"
        return "not-reproduced", "the tensor already requires grad: the misspelt attribute changes nothing"
    if owners:
        return "not-reproduced", f"the object is a {type(owner).__name__}, not a tensor"
    return None


class RequiresGradAttributeTypo(Violation):
    attribute: str  # `w.requires_grads`
    help = "Write `.requires_grad`"

    def message(self) -> str:
        return f"`{self.attribute}` is a typo: `requires_grad` stays unchanged"


class RequiresGradKeywordTypo(Violation):
    call: str
    keyword: str
    help = "Write `requires_grad=`"

    def message(self) -> str:
        return f"`{self.call}` raises on `{self.keyword}=`: no such parameter"


class RequiresGradTypo(Rule):
    """## What it does
    Flags `x.require_grad = ...` (and `requires_grads`, `require_grads`) attribute assignments, and
    `require_grad=` keyword arguments to torch functions.

    ## Why is this bad?
    Assigning a misspelt attribute on a tensor silently creates a new Python attribute: the
    tensor's real `requires_grad` flag is unchanged, so a parameter you meant to freeze keeps
    training, or one you meant to train gets no gradient. Passed to a torch function, the keyword
    raises `TypeError: ... got an unexpected keyword argument 'require_grad'`.

    ## Example
    ```python
    for p in backbone.parameters():
        p.require_grad = False
    ```

    ## Use instead
    ```python
    for p in backbone.parameters():
        p.requires_grad = False
    ```

    ## Fix safety
    Safe: the misspelt attribute or keyword is renamed to `requires_grad`. The keyword form
    raised `TypeError` before; the attribute form starts tracking gradients, which is what the
    line asked for.

    ## References
    - [torch.Tensor.requires_grad](https://pytorch.org/docs/stable/generated/torch.Tensor.requires_grad.html)
    """

    code = "TL109"
    name = "requires-grad-typo"
    summary = "`require_grad` typo: the flag is never set"
    peer_checks = {"TOR002": "covered"}  # rules_docs/peer-parity.md
    severity = "error"
    tags = ("correctness", "autograd")
    requires_text = ('require_grad', 'requires_grads', 'requiresgrad', 'requires_gradient')
    precision = "very-high"
    evidence = Evidence(generic_probe=True, probe=probe_requires_grad_typo, slice="attribute-typo", judge=judge_requires_grad_typo,
                        crash=r"unexpected keyword argument 'require")

    def visit_Assign(self, node: ast.Assign, ctx: FileContext) -> None:
        for target in node.targets:
            if isinstance(target, ast.Attribute) and target.attr in _TYPOS:
                self.report(target, RequiresGradAttributeTypo(attribute=dotted(target)),
                            fix=_rename(ctx, end_of(ctx.source, target), target.attr, from_end=True))

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        for kw in node.keywords:
            if kw.arg in _TYPOS:
                name = ctx.call_name(node)
                if name is not None and name.startswith("torch."):
                    self.report(kw, RequiresGradKeywordTypo(call=name, keyword=kw.arg), fix=_rename(ctx, start_of(ctx.source, kw), kw.arg))


def _rename(ctx: FileContext, anchor: tuple[int, int], typo: str, from_end: bool = False) -> Fix:
    """Replace the misspelt name, which ends at `anchor` (an attribute's last token) or
    starts there (a keyword argument's name)."""
    row, col = anchor
    start, end = ((row, col - len(typo)), anchor) if from_end else (anchor, (row, col + len(typo)))
    return make_fix("Rename to `requires_grad`", [edit(start, end, "requires_grad")])
