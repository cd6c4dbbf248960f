"""TL708 (off by default): weight decay on norm and bias parameters through one `model.parameters()` group."""

from __future__ import annotations

import ast

from torchlint.analysis.dominance import reaches_here
from torchlint.checker import FileContext
from torchlint.rules.base import Evidence, Rule, Violation, dotted, has_star_kwargs, keyword, literal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional

_NORMS = frozenset({"BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm", "LayerNorm", "GroupNorm",
                    "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "RMSNorm"})
# Optimizers whose default weight_decay is not 0.
_DEFAULT_DECAY = {"AdamW": 0.01}


def probe_norm_decay(params: dict, device: str) -> tuple[str, str]:
    """The --verify fact probe: does a step at this weight decay shrink a LayerNorm's scale and
    bias when the loss does not depend on them?"""
    import torch

    decay = float(params.get("weight_decay", 0.01))
    norm = torch.nn.LayerNorm(4)
    with torch.no_grad():
        norm.bias.fill_(0.5)
    opt = torch.optim.SGD(norm.parameters(), lr=0.1, weight_decay=decay)
    (norm(torch.randn(2, 4)) * 0.0).sum().backward()  # a zero gradient: only the decay acts
    opt.step()
    weight, bias = norm.weight[0].item(), norm.bias[0].item()
    if weight < 1.0 and bias < 0.5:
        return "confirmed", f"one SGD step at weight_decay={decay:g} with a zero gradient: LayerNorm weight 1.0 -> {weight:.6f}, bias 0.5 -> {bias:.6f}"
    return "not-reproduced", f"at weight_decay={decay:g} the LayerNorm's parameters stayed at {weight:g}, {bias:g}"


class DecayOnNormAndBias(Violation):
    weight_decay: float
    norm: str  # the norm layer's class
    model: str
    help = "Put norm and bias parameters in a group with `weight_decay=0.0`"

    def message(self) -> str:
        return (f"weight decay {self.weight_decay:g} also shrinks the `{self.norm}` scales and the biases "
                f"of `{self.model[:30]}`")


class WeightDecayOnNormAndBias(Rule):
    """On the 2026-12 held-out corpus (54 projects, independent triage), 1 of 2 findings were true (the false one: bf16 norm scales the decay cannot move); off by
    default. Enable it with `--extend-select TL708`.

    ## What it does
    Flags a `torch.optim` optimizer built from one group, `model.parameters()`, with weight decay
    (a literal `weight_decay` above 0, or `AdamW`'s default of 0.01) where `model` is an instance
    of an `nn.Module` class of the same file that has normalization layers (`BatchNorm*`,
    `LayerNorm`, `GroupNorm`, `InstanceNorm*`, `RMSNorm`). Models of unknown class, parameter
    groups and filtered parameter lists are not flagged.

    Off by default (enable with `--extend-select TL708`): decaying every parameter is the
    classic recipe for convolutional networks trained with SGD, and many models train well with
    it, so a finding is a tuning question rather than a bug.

    ## Why is this bad?
    Weight decay pulls every parameter it is applied to towards zero. For a norm layer's scale
    that means pulling the layer's output towards zero, and for biases and norm shifts it is a
    penalty with no regularizing purpose; recipes for transformers and modern CNNs (BERT, ViT,
    timm, torchvision's `norm_weight_decay`) leave them out. Checked on torch 2.13: one SGD step
    at `weight_decay=0.01` with a zero gradient moves a `LayerNorm`'s weight from 1.0 and its
    bias from 0.5 towards zero; at `weight_decay=0` they stay.

    ## Example
    ```python
    class Block(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.norm = nn.LayerNorm(d)
            self.fc = nn.Linear(d, d)

    model = Block(512)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
    ```

    ## Use instead
    ```python
    class Block(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.norm = nn.LayerNorm(d)
            self.fc = nn.Linear(d, d)

    model = Block(512)
    decay = [p for n, p in model.named_parameters() if p.ndim > 1]
    no_decay = [p for n, p in model.named_parameters() if p.ndim <= 1]  # norms and biases
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                                   {"params": no_decay, "weight_decay": 0.0}], lr=3e-4)
    ```

    ## Fix safety
    No automatic fix: which parameters to exempt is a modelling choice.

    ## References
    - [torch.optim: per-parameter options](https://pytorch.org/docs/stable/optim.html#per-parameter-options)
    - torch-audit TA402 (its TA403, weight decay on embeddings, has no torchlint rule)
    """

    code = "TL708"
    name = "weight-decay-on-norm-and-bias"
    summary = "weight decay applied to norm and bias parameters through a single `model.parameters()` group"
    peer_checks = {"TA402": "covered statically for one `model.parameters()` group on a same-file model with norm layers; off by default (decaying everything is the classic SGD recipe)"}  # rules_docs/peer-parity.md
    severity = "info"
    default_enabled = False
    tags = ("optimization",)
    precision = "low"
    requires_text = ("Norm",)
    evidence = Evidence(probe=probe_norm_decay)

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        name = ctx.call_name(node) or ""
        if not name.startswith("torch.optim.") or name.count(".") != 2 or has_star_kwargs(node):
            return
        optimizer = name.rsplit(".", 1)[1]
        if not optimizer[:1].isupper():
            return
        given = keyword(node, "weight_decay")
        decay = literal(given.value) if given is not None else _DEFAULT_DECAY.get(optimizer, 0)
        if not isinstance(decay, (int, float)) or isinstance(decay, bool) or decay <= 0:
            return
        params_kw = keyword(node, "params")
        params = node.args[0] if node.args else (params_kw.value if params_kw is not None else None)
        if not (isinstance(params, ast.Call) and isinstance(params.func, ast.Attribute)
                and params.func.attr == "parameters" and not params.args and not params.keywords):
            return
        model = params.func.value
        norm = self._norm_layer(model, node.lineno, ctx)
        if norm is None:
            return
        self.report(node, DecayOnNormAndBias(weight_decay=decay, norm=norm, model=dotted(model)),
                    params={"weight_decay": float(decay)})

    def _norm_layer(self, model: ast.AST, lineno: int, ctx: FileContext) -> Optional[str]:
        """A norm layer of `model`'s class when that class is defined in this file."""
        value: Optional[ast.AST] = None
        if isinstance(model, ast.Name):
            binding = ctx.binding_before(model.id, lineno - 1, module_fallback=True)
            if binding is not None and binding.index is None and isinstance(binding.node, ast.Assign) \
                    and reaches_here(ctx, binding.node):
                value = binding.value
        elif isinstance(model, ast.Attribute) and isinstance(model.value, ast.Name) and model.value.id == "self":
            value = ctx.self_attribute_value(model.attr)
        # `Net()` or `Net().to(device)`
        while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in ("to", "cuda"):
            value = value.func.value
        if not isinstance(value, ast.Call) or not isinstance(value.func, ast.Name):
            return None
        cls = ctx.module_class(value.func.id)
        if cls is None or not ctx.is_module_class(cls):
            return None
        for sub in ast.walk(cls):
            if isinstance(sub, ast.Call):
                qualified = ctx.module_scope.imports.call_name(sub) or ""
                if qualified.startswith("torch.nn.") and qualified.rsplit(".", 1)[1] in _NORMS:
                    return qualified.rsplit(".", 1)[1]
        return None
