"""TL720: a runtime check of `torchlint run`, with its monitor (what the program records) and judge."""

from __future__ import annotations

import functools
import os
import weakref

from torchlint.diagnostics import Finding
import torchlint.runtime.judging as run
from torchlint.runtime.checks import RuntimeCheck

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional
    from pathlib import Path


class EvalBackwardMonitor:
    """Backwards that ran through an eval-mode root forward of a module with Dropout/BatchNorm
    layers (a hook on its outputs fired), reported as `eval_backward` when an optimizer then
    steps over that module's parameters; a zero_grad in between drops them. Also where the
    program last called `.eval()` on each module (`eval@` counts, which
    train-mode-not-restored's judge reads)."""

    # Layers whose behaviour depends on train()/eval().
    MODE_DEPENDENT = ("Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout",
                      "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm", "LazyBatchNorm1d",
                      "LazyBatchNorm2d", "LazyBatchNorm3d")

    def __init__(self) -> None:
        self.pending: list[dict] = []  # backwards through an eval-mode forward, awaiting a step
        self.eval_sites: Any = weakref.WeakKeyDictionary()  # module -> where .eval() was last called

    def install(self, m: Any, torch: Any) -> None:
        original = torch.nn.Module.train
        monitor = self

        @functools.wraps(original)
        def train(module: Any, mode: bool = True) -> Any:
            if getattr(m.local, "in_train", False):
                return original(module, mode)
            m.local.in_train = True
            try:
                return original(module, mode)
            finally:
                m.local.in_train = False
                if not mode:
                    site = m.user.site(2)
                    monitor.eval_sites[module] = site
                    key = f"eval@{site[0]}:{site[1]}" if site else "eval"
                    m.counts[key] = m.counts.get(key, 0) + 1

        m.patch(torch.nn.Module, "train", train)

    def forward(self, m: Any, module: Any, args: Any, output: Any, root: bool) -> None:
        """An eval-mode root forward with Dropout/BatchNorm layers and parameters that train: a
        hook on its outputs tells whether a backward runs through it."""
        if not root or module.training or not m.pending_roots:
            return
        entry = m.pending_roots[-1]
        if entry["ref"]() is not module or not any(p.requires_grad for p in module.parameters()):
            return
        layers = sorted({type(sub).__name__ for sub in module.modules() if type(sub).__name__ in self.MODE_DEPENDENT})
        if not layers:
            return
        entry.update(layers=layers, handles=[])

        def reached(grad: Any) -> None:
            entry["reached"] = True

        for tensor in m.tensors(output):
            if tensor.requires_grad:
                entry["handles"].append(tensor.register_hook(reached))

    def after_backward(self, m: Any, site: Optional[list], fn: str, accumulates: bool) -> None:
        for entry in m.pending_roots:
            for handle in entry.get("handles", ()):
                handle.remove()
            module = entry["ref"]()
            if accumulates and entry.get("reached") and module is not None:
                self.pending.append({"ref": entry["ref"], "site": site, "forward_site": entry["site"],
                                     "layers": entry["layers"], "module": type(module).__name__,
                                     "eval_site": self.eval_sites.get(module)})
        del self.pending[:-16]

    def step(self, m: Any, optimizer: Any, site: Optional[list], event: dict) -> None:
        self.settle(m, optimizer, stepped=True)

    def zero_grad(self, m: Any, owner: Any, site: Optional[list]) -> None:
        self.settle(m, owner, stepped=False)

    def settle(self, m: Any, owner: Any, stepped: bool) -> None:
        """`owner` (an optimizer stepping or zeroing, or a module zeroing) settles the pending
        eval-mode backwards over its parameters: reported at a step, dropped at a zero_grad."""
        if not self.pending:
            return
        if hasattr(owner, "param_groups"):
            ids = {id(p) for group in owner.param_groups for p in group["params"]}
        else:
            ids = {id(p) for p in owner.parameters()}
        kept = []
        for entry in self.pending:
            module = entry["ref"]()
            if module is None or not any(id(p) in ids for p in module.parameters()):
                kept.append(entry)
            elif stepped:
                m.record("eval_backward", entry["site"], module=entry["module"], forward_site=entry["forward_site"],
                         layers=entry["layers"], eval_site=entry["eval_site"])
        self.pending = kept


class EvalModeDuringBackward(RuntimeCheck):
    """Runtime-only check: reported by `torchlint run` and `check_training_step`, at the
    `backward()` call.

    ## What it does
    Reports a `backward()` that differentiates through the forward of a model that was in eval
    mode (`model.training == False`) and contains layers whose behaviour depends on the mode
    (`Dropout*`, `BatchNorm*`). Models in eval mode without such layers are not reported, since
    eval mode changes nothing for them.

    Only a forward whose gradient reaches an optimizer step counts: the backward must run through
    that forward's output (a `.detach()`, an `autograd.grad(..., inputs=x)` or a validation
    forward never backpropagated do not), the eval-mode model must have parameters that require
    grad, and an optimizer must step over them with no `zero_grad` in between. So a distillation
    teacher outside the optimizer, an FGSM perturbation crafted in eval mode, a frozen
    BatchNorm perceptual network, a GAN sample taken in eval mode and a validation forward without
    `no_grad` are not reported.

    ## Why is this bad?
    In eval mode dropout is off and batch norm uses its running statistics instead of the batch's
    and stops updating them. Training in that state trains a different network than intended,
    usually without any error. It typically follows a validation loop that called `model.eval()`
    without a matching `model.train()` before the next epoch (see {rule:train-mode-not-restored} for the static side).

    ## Example
    ```python
    for epoch in range(epochs):
        for x, y in train_loader:
            loss = criterion(model(x), y)
            loss.backward()
            opt.step()
        model.eval()
        evaluate(model, val_loader)   # the next epoch trains in eval mode
    ```

    ## Use instead
    ```python
    for epoch in range(epochs):
        model.train()
        for x, y in train_loader:
            ...
        model.eval()
        evaluate(model, val_loader)
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [Module.train / Module.eval](https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.train)
    - [torch.nn.Dropout](https://pytorch.org/docs/stable/generated/torch.nn.Dropout.html)
    """

    code = "TL720"
    name = "eval-mode-during-backward"
    summary = "backward ran through a forward done in eval mode with Dropout/BatchNorm layers"
    seen = "backward through a forward done in eval mode with Dropout/BatchNorm"
    monitor = EvalBackwardMonitor
    severity = "warning"

    @classmethod
    def problems(cls, obs: run.Observation, static: list[Finding], cwd: Path) -> list[run.RuntimeProblem]:
        """The run's findings of this check."""
        # An eval() call flagged statically (TL704) is that finding's to confirm.
        static_eval_sites = {(os.path.realpath(cwd / f.path), f.row) for f in static if f.code == "TL704"}
        return [run.RuntimeProblem(cls.code, e["site"],
                                   f"backward ran through the forward of {e['module']} at {run.where(e['forward_site'], cwd)}, "
                                   f"done in eval mode: its {', '.join(e['layers'])} layer(s) behaved as at evaluation")
                for e in obs.by_kind["eval_backward"]
                if not (e.get("eval_site") and (e["eval_site"][0], e["eval_site"][1]) in static_eval_sites)]
