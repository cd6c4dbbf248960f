"""TL703: `model.forward(x)` bypasses hooks."""

from __future__ import annotations

import ast

from torchlint.analysis import inference
from torchlint.checker import FileContext
from torchlint.rules.base import Evidence, Rule, Violation, dotted

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional


# -- evidence (runs only in the --verify worker: see CONTRIBUTING.md) ----------------------
def probe_forward_directly(params: dict, device: str) -> tuple[str, str]:
    import torch
    import torch.nn as nn

    m = nn.Linear(2, 2).to(device)
    calls: list[int] = []
    m.register_forward_hook(lambda *a: calls.append(1))
    x = torch.ones(1, 2, device=device)
    m.forward(x)  # noqa: TL703 - the hazard, on purpose
    direct = len(calls)
    m(x)
    if direct == 0 and len(calls) == 1:
        return "confirmed", "a registered forward hook ran for module(x) but not for module.forward(x)"
    return "not-reproduced", f"hook calls: {direct} direct, {len(calls) - direct} via __call__"


def judge_forward_directly(facts: dict, runs: list) -> Optional[tuple[str, str]]:
    import torch.nn as nn
    from _evidence import failed, flag

    rec = flag(runs)
    if rec is None or failed(rec, "the call"):
        return failed(rec, "the call")
    module = rec.get("receiver")
    if not isinstance(module, nn.Module):
        return "not-reproduced", f"the receiver is a {type(module).__name__}, not an nn.Module"
    from torch.nn.modules import module as module_impl
    hooks = (len(module._forward_hooks) + len(module._forward_pre_hooks)
             + len(module_impl._global_forward_hooks) + len(module_impl._global_forward_pre_hooks))
    if hooks:
        return ("confirmed", f"{type(module).__name__} has {hooks} forward hook(s) registered; calling .forward() "
                             "directly skipped them")
    return ("not-reproduced", f"no forward hooks are registered on {type(module).__name__} here, so .forward(x) "
                              "computed what calling the module would")


class DirectForwardCall(Violation):
    forward: str  # `model.forward`
    module: str  # `model`

    def message(self) -> str:
        return f"`{self.forward}(...)` skips the module's hooks"

    def help_text(self) -> str:
        return f"Call the module: `{self.module}(...)`"


class ForwardCalledDirectly(Rule):
    """On the 2026-12 held-out corpus (54 projects, independent triage), 0 of 5 findings were true;
    off by default. Enable it with `--extend-select TL703`.

    ## What it does
    Flags `module.forward(x)` on any receiver except `self` and `super()` (and the unbound
    `Base.forward(self, x)`).

    ## Why is this bad?
    `module(x)` runs `__call__`, which runs forward pre-hooks, `forward`, and forward hooks, and
    is what DDP, FSDP, quantization observers, `torch.compile` guards and profilers hook into.
    Calling `.forward` directly skips all of them, so wrappers silently misbehave.

    ## Example
    ```python
    model = nn.Linear(16, 4)
    out = model.forward(x)
    ```

    ## Use instead
    ```python
    model = nn.Linear(16, 4)
    out = model(x)
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [torch.nn.Module.__call__ / hooks](https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.register_forward_hook)
    """

    code = "TL703"
    name = "forward-called-directly"
    summary = "module.forward(x) called directly skips hooks"
    peer_checks = {"W5516": "covered"}  # rules_docs/peer-parity.md
    severity = "warning"
    default_enabled = False
    tags = ("correctness", "module")
    requires_text = ('.forward',)
    evidence = Evidence(generic_probe=True, probe=probe_forward_directly, slice="call", judge=judge_forward_directly)

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        func = node.func
        if not isinstance(func, ast.Attribute) or func.attr != "forward":
            return
        receiver = func.value
        if isinstance(receiver, ast.Name) and receiver.id in ("self", "cls"):
            return
        if isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Name) and receiver.func.id == "super":
            return
        # Only receivers known to be nn.Modules: many other objects have a `forward` method
        # (skorch nets, ONNX/OpenCV inference backends), and `Base.forward(self, x)` or
        # `type(m).forward(m, x)` is an unbound call of a class's implementation.
        if inference.kind_of(receiver, ctx) != inference.MODULE:
            return
        self.report(node, DirectForwardCall(forward=dotted(func), module=dotted(receiver)))
