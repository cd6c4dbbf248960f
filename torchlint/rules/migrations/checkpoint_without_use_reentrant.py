"""TL903: torch.utils.checkpoint without an explicit `use_reentrant=`."""

from __future__ import annotations

import ast

from torchlint.analysis.torch_versions import at_least
from torchlint.checker import FileContext
from torchlint.edits import UNSAFE, add_keyword, make_fix
from torchlint.rules.base import Evidence, Rule, TORCH_VERSION_OPTION, Violation, has_star_kwargs, keyword

_CHECKPOINTS = ("torch.utils.checkpoint.checkpoint", "torch.utils.checkpoint.checkpoint_sequential")


class ImplicitUseReentrant(Violation):
    checkpoint: str  # `checkpoint` / `checkpoint_sequential`
    help = "Pass `use_reentrant=False` (recommended) or `True` to keep today's behaviour"

    def message(self) -> str:
        return f"`{self.checkpoint}` without `use_reentrant=` warns and runs the reentrant variant"


class CheckpointWithoutUseReentrant(Rule):
    """On the 2026-12 held-out corpus (54 projects, independent triage), 8 of 9 findings were true;
    off by default. Enable it with `--extend-select TL903`.

    ## What it does
    Flags `torch.utils.checkpoint.checkpoint(...)` and `checkpoint_sequential(...)` called without
    `use_reentrant=`. Calls that pass `**kwargs` are not flagged. Not reported when
    `torch-version` is below 2.1.

    ## Why is this bad?
    On torch 2.13 such a call warns ("the use_reentrant parameter should be passed explicitly.
    Starting in PyTorch 2.9, calling checkpoint without use_reentrant will raise an exception")
    and then runs the *reentrant* variant (`use_reentrant=True`). Despite the warning's wording,
    torch 2.13 still only warns. torch recommends the non-reentrant variant, which supports
    `torch.autograd.grad`, keyword arguments and inputs that do not require grad.

    ## Example
    ```python
    from torch.utils.checkpoint import checkpoint

    class Net(nn.Module):
        def forward(self, h):
            return checkpoint(self.block, h)
    ```

    ## Use instead
    ```python
    from torch.utils.checkpoint import checkpoint

    class Net(nn.Module):
        def forward(self, h):
            return checkpoint(self.block, h, use_reentrant=False)
    ```

    ## Fix safety
    Unsafe (applied with `--unsafe-fixes`): the fix adds `use_reentrant=False`, the variant torch
    recommends, which is not the one that ran before (the two differ in what they support and
    in how they recompute). Pass `use_reentrant=True` by hand to keep today's behaviour exactly.

    ## References
    - [torch.utils.checkpoint](https://pytorch.org/docs/stable/checkpoint.html)
    - TorchFix TOR003
    """

    code = "TL903"
    name = "checkpoint-without-use-reentrant"
    summary = "torch.utils.checkpoint called without an explicit `use_reentrant=`"
    peer_checks = {"TOR003": "covered"}  # rules_docs/peer-parity.md
    severity = "warning"
    default_enabled = False
    tags = ("migration", "deprecation", "autograd")
    precision = "very-high"
    requires_text = ("checkpoint",)
    options = {"torch-version": TORCH_VERSION_OPTION}
    evidence = Evidence(reason=("checked once on torch 2.13: the call warns and runs the reentrant variant "
                                "(tests/test_migrations.py repeats it when torch is installed)"))

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        func = node.func
        last = func.attr if isinstance(func, ast.Attribute) else (ctx.qualname(func) or "") \
            if isinstance(func, ast.Name) else ""
        if not last.endswith(("checkpoint", "checkpoint_sequential")):
            return  # cheap test first: most calls are not to checkpoint
        name = ctx.call_name(node)
        if name not in _CHECKPOINTS or keyword(node, "use_reentrant") is not None or has_star_kwargs(node):
            return
        if not at_least(self.settings["torch-version"], "2.1"):
            return  # use_reentrant=False (and the warning) are newer than the code's torch
        short = name.rsplit(".", 1)[1]
        add = add_keyword(ctx.source, node, "use_reentrant=False")
        self.report(node, ImplicitUseReentrant(checkpoint=short),
                    fix=make_fix("Pass `use_reentrant=False`", [add], UNSAFE) if add else None)
