"""TL707 (off by default): `Adam(..., weight_decay>0)`, where `AdamW` is usually meant."""

from __future__ import annotations

import ast

from torchlint.checker import FileContext
from torchlint.rules.base import Evidence, Rule, Violation, arg_or_keyword, has_star_kwargs, literal

_ADAM = frozenset({"torch.optim.Adam", "torch.optim.adam.Adam"})


def probe_adam_weight_decay(params: dict, device: str) -> tuple[str, str]:
    """The --verify fact probe: do Adam and AdamW take different steps at this weight decay?"""
    import torch

    decay = float(params.get("weight_decay", 0.01))
    results = []
    for cls in (torch.optim.Adam, torch.optim.AdamW):
        weight = torch.nn.Parameter(torch.tensor([1.0, -2.0, 3.0]))
        opt = cls([weight], lr=0.1, weight_decay=decay)
        for _ in range(3):
            opt.zero_grad()
            (weight * torch.tensor([0.5, 0.1, 0.0])).sum().backward()
            opt.step()
        results.append(weight.detach().clone())
    if torch.allclose(results[0], results[1]):
        return "not-reproduced", f"Adam and AdamW take the same steps at weight_decay={decay:g}"
    return "confirmed", (f"after 3 steps at weight_decay={decay:g}: Adam {results[0].tolist()} (L2 added to the "
                         f"gradient, then scaled), AdamW {results[1].tolist()} (decay applied to the weights)")


class CoupledAdamWeightDecay(Violation):
    weight_decay: float
    help = "Use `torch.optim.AdamW` (or `decoupled_weight_decay=True`) if decoupled decay is meant"

    def message(self) -> str:
        return (f"`Adam(weight_decay={self.weight_decay:g})` is an L2 term rescaled by the adaptive step, "
                "not AdamW's decay")


class AdamWeightDecay(Rule):
    """On the 2026-12 held-out corpus (54 projects, independent triage), 1 of 5 findings were true (4 deliberate L2 penalties, e.g. the DDPG paper's critic); off by
    default. Enable it with `--extend-select TL707`.

    ## What it does
    Flags `torch.optim.Adam(...)` given a literal `weight_decay` above 0 (by keyword or as the
    fifth positional argument) and not `decoupled_weight_decay=True`.

    Off by default (enable with `--extend-select TL707`): Adam with an L2 penalty is a valid
    choice that some papers and reproductions make on purpose, so a finding is a question to the
    author, not a bug on every path.

    ## Why is this bad?
    `Adam`'s `weight_decay` adds `weight_decay * w` to the gradient, which Adam then divides by
    the running root-mean-square of the gradient: parameters with large gradients are barely
    decayed, those with small ones strongly. That is not the weight decay of the AdamW paper
    (Loshchilov and Hutter), which `torch.optim.AdamW` implements by shrinking the weights
    directly, and hyper-parameters copied from AdamW recipes (`weight_decay=0.01`...) mean
    something else under `Adam`. Checked on torch 2.13: after three steps on the same gradients
    at `weight_decay=0.01`, the two optimizers give different weights; at `weight_decay=0` they
    are identical. torch 2.13's `Adam` also takes `decoupled_weight_decay=True`, which makes it
    behave as AdamW.

    ## Example
    ```python
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-4, weight_decay=0.01)
    ```

    ## Use instead
    ```python
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01)
    ```

    ## Fix safety
    No automatic fix: the switch changes the training dynamics, and the right decay for AdamW
    is usually larger than the L2 coefficient that worked with Adam.

    ## References
    - [torch.optim.AdamW](https://pytorch.org/docs/stable/generated/torch.optim.AdamW.html)
    - [torch.optim.Adam](https://pytorch.org/docs/stable/generated/torch.optim.Adam.html)
    - torch-audit TA401
    """

    code = "TL707"
    name = "adam-weight-decay"
    summary = "`Adam(..., weight_decay>0)` couples L2 to the adaptive step; `AdamW` is usually meant"
    peer_checks = {"TA401": "covered statically; off by default, since Adam with L2 is sometimes meant"}  # rules_docs/peer-parity.md
    severity = "info"
    default_enabled = False
    tags = ("optimization",)
    precision = "medium"
    requires_text = ("weight_decay",)
    evidence = Evidence(probe=probe_adam_weight_decay)

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        if ctx.call_name(node) not in _ADAM or has_star_kwargs(node):
            return
        decay = literal(arg_or_keyword(node, 4, "weight_decay"))
        if not isinstance(decay, (int, float)) or isinstance(decay, bool) or decay <= 0:
            return
        decoupled = arg_or_keyword(node, 11, "decoupled_weight_decay")
        if decoupled is not None and literal(decoupled) is not False:
            return
        self.report(node, CoupledAdamWeightDecay(weight_decay=decay),
                    params={"weight_decay": float(decay)})
