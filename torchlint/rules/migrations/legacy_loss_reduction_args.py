"""TL907: loss `size_average=` / `reduce=` arguments, deprecated in favour of `reduction=`."""

from __future__ import annotations

import ast

from torchlint.checker import FileContext
from torchlint.edits import Fix, edit, end_of, has_comment, make_fix, start_of, text_of
from torchlint.rules.base import Evidence, Rule, Violation, keyword, literal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional

_LEGACY = ("size_average", "reduce")


def _is_loss(name: Optional[str]) -> bool:
    if name is None:
        return False
    if name.startswith("torch.nn.functional."):
        last = name.rsplit(".", 1)[1]
        return last.endswith("_loss") or last in ("cross_entropy", "binary_cross_entropy",
                                                  "binary_cross_entropy_with_logits", "kl_div", "nll_loss")
    return name.startswith("torch.nn.") and name.endswith("Loss") and name.count(".") == 2


def reduction_for(size_average: object, reduce: object) -> Optional[str]:
    """torch's own mapping (torch.nn._reduction.legacy_get_string); None for non-literals."""
    if size_average not in (None, True, False) or reduce not in (None, True, False):
        return None
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    return "mean" if size_average and reduce else "sum" if reduce else "none"


class LegacyReductionArgs(Violation):
    args: tuple[str, ...]  # `size_average`, `reduce`, as given
    reduction: Optional[str]  # the equivalent `reduction=`, when the values say

    def message(self) -> str:
        args = " and ".join(f"`{arg}=`" for arg in self.args)
        several = len(self.args) > 1
        return (f"{args} {'are' if several else 'is'} deprecated (torch warns and maps "
                f"{'them' if several else 'it'} to `reduction=`)")

    def help_text(self) -> str:
        spelled = f"`reduction='{self.reduction}'`" if self.reduction else "`reduction=` ('mean', 'sum' or 'none')"
        return f"Pass {spelled}"


class LegacyLossReductionArgs(Rule):
    """## What it does
    Flags `size_average=` and `reduce=` passed to a `torch.nn` loss class or a
    `torch.nn.functional` loss function.

    ## Why is this bad?
    Both were replaced by `reduction=` ('mean', 'sum', 'none'). On torch 2.13 every such call
    warns ("size_average and reduce args will be deprecated, please use reduction='sum'
    instead"), and the pair is easy to misread: `size_average=False` means *sum*, and
    `reduce=False` means *no reduction at all*, whatever `size_average` says.

    ## Example
    ```python
    criterion = nn.MSELoss(size_average=False)
    ```

    ## Use instead
    ```python
    criterion = nn.MSELoss(reduction="sum")
    ```

    ## Fix safety
    Safe: literal values are mapped exactly as torch maps them
    (`torch.nn._reduction.legacy_get_string`): `reduce=False` → `'none'`,
    `size_average=False` → `'sum'`, otherwise `'mean'`. Non-literal values, calls that also pass
    `reduction=`, and keywords separated by other arguments are not rewritten.

    ## References
    - [torch.nn loss functions](https://pytorch.org/docs/stable/nn.html#loss-functions)
    """

    code = "TL907"
    name = "legacy-loss-reduction-args"
    summary = "Loss `size_average=`/`reduce=` arguments are deprecated; use `reduction=`"
    severity = "warning"
    tags = ("migration", "deprecation", "loss")
    precision = "very-high"
    requires_text = ("size_average", "reduce=")
    evidence = Evidence(reason=("checked once on torch 2.13: the loss warns and maps the pair to `reduction=` exactly as "
                                "the fix does (tests/test_migrations.py repeats it when torch is installed)"))

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        found = [kw for kw in node.keywords if kw.arg in _LEGACY]
        if not found or not _is_loss(ctx.call_name(node)):
            return
        size_average = keyword(node, "size_average")
        reduce = keyword(node, "reduce")
        value = reduction_for(literal(size_average.value) if size_average else None,
                              literal(reduce.value) if reduce else None)
        self.report(found[0], LegacyReductionArgs(args=tuple(str(kw.arg) for kw in found), reduction=value),
                    end_node=found[-1], fix=_fix(node, found, value, ctx))


def _fix(node: ast.Call, found: list[ast.keyword], value: Optional[str], ctx: FileContext) -> Optional[Fix]:
    """Replace the legacy keywords with `reduction=`, when they sit next to each other and
    `reduction=` is not passed already."""
    if value is None or keyword(node, "reduction") is not None or len(node.args) > 2:
        return None
    index = [node.keywords.index(kw) for kw in found]
    if index != list(range(index[0], index[0] + len(index))):
        return None
    start, end = start_of(ctx.source, found[0]), end_of(ctx.source, found[-1])
    span = text_of(ctx.source, node)
    if len(found) > 1 and has_comment(span):
        return None
    return make_fix(f"Pass `reduction='{value}'`", [edit(start, end, f"reduction={value!r}")])
