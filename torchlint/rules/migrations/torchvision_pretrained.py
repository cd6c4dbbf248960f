"""TL902: torchvision model builders called with `pretrained=` instead of `weights=`."""

from __future__ import annotations

import ast

from torchlint.checker import FileContext
from torchlint.edits import SAFE, UNSAFE, Fix, make_fix, replace
from torchlint.rules.base import Evidence, Rule, Violation, literal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional

_RENAMES = {"pretrained": "weights", "pretrained_backbone": "weights_backbone"}


class PretrainedKeyword(Violation):
    keyword: str  # `pretrained`, `pretrained_backbone`
    new: str  # its replacement, `weights`

    def message(self) -> str:
        return f"`{self.keyword}=` is deprecated since torchvision 0.13"

    def help_text(self) -> str:
        return f"Pass `{self.new}=` (a weights enum, \"DEFAULT\", or None)"


class TorchvisionPretrained(Rule):
    """## What it does
    Flags torchvision model builders (`torchvision.models.*`) called with `pretrained=` or
    `pretrained_backbone=`.

    ## Why is this bad?
    torchvision 0.13 replaced these flags with `weights=` / `weights_backbone=`, which name the
    exact weights (`ResNet50_Weights.IMAGENET1K_V2`, `"DEFAULT"`, or `None`). The old flags warn
    on every call and are slated for removal. (torchvision is not installed next to torch on the
    machine this rule was written on, so this is torchvision's documented behaviour, not a run.)

    ## Example
    ```python
    import torchvision

    net = torchvision.models.resnet50(pretrained=True)
    ```

    ## Use instead
    ```python
    import torchvision

    net = torchvision.models.resnet50(weights=torchvision.models.ResNet50_Weights.IMAGENET1K_V1)
    ```

    ## Fix safety
    `pretrained=False` → `weights=None` is safe (no weights either way). `pretrained=True` →
    `weights="DEFAULT"` is unsafe (applied with `--unsafe-fixes`): `"DEFAULT"` is the best
    weights torchvision has, which for some models are newer than the ones `pretrained=True`
    loaded, so the numbers change; name the legacy enum value (`IMAGENET1K_V1`) to keep them.
    Non-literal values are not rewritten.

    ## References
    - [torchvision models: weights](https://pytorch.org/vision/stable/models.html)
    - TorchFix TOR201
    """

    code = "TL902"
    name = "torchvision-pretrained"
    summary = "torchvision model built with the deprecated `pretrained=` instead of `weights=`"
    peer_checks = {"TOR201": "covered"}  # rules_docs/peer-parity.md
    severity = "warning"
    tags = ("migration", "deprecation")
    precision = "very-high"
    requires_text = ("torchvision",)  # the builders come from there
    evidence = Evidence(reason=("torchvision is not installed next to torch here, so nothing can be run; the message "
                                "states torchvision's documented behaviour (0.13 deprecated `pretrained=`)"))

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        if not any(kw.arg in _RENAMES for kw in node.keywords):
            return
        name = ctx.call_name(node)
        if name is None or not name.startswith("torchvision.models."):
            return
        for kw in node.keywords:
            if kw.arg in _RENAMES:
                new = _RENAMES[kw.arg]
                self.report(kw, PretrainedKeyword(keyword=kw.arg, new=new),
                            fix=_fix(kw, new, ctx))


def _fix(kw: ast.keyword, new: str, ctx: FileContext) -> Optional[Fix]:
    value = literal(kw.value)
    if value is False:
        return make_fix(f"Pass `{new}=None`", [replace(ctx.source, kw, f"{new}=None")], SAFE)
    if value is True:
        # "DEFAULT" is the best weights torchvision has for the model, which for some models
        # (resnet50, ...) are newer than the ones `pretrained=True` loaded: different numbers.
        return make_fix(f'Pass `{new}="DEFAULT"`', [replace(ctx.source, kw, f'{new}="DEFAULT"')], UNSAFE)
    return None
