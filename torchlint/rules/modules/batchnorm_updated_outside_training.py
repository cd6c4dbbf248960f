"""TL721: a runtime check of `torchlint run`, with its monitor (what the program records) and judge."""

from __future__ import annotations

import functools
import weakref

from torchlint.diagnostics import Finding
import torchlint.runtime.judging as run
from torchlint.runtime.checks import RuntimeCheck

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional
    from pathlib import Path


class BatchNormStatsMonitor:
    """After the first optimizer step, root forwards of a model that trains (some parameter is
    in an optimizer), in train mode, whose BatchNorm layers update running statistics
    (train mode, `track_running_stats`, a momentum) with a batch that never reaches a backward:
    run under no_grad / inference_mode (`bn_stats`, at once), or with grad but with an output
    no backward reached before an optimizer stepped over the model (`bn_stats`, then). Layers
    whose momentum is None or whose statistics were reset after training began (a
    recalibration, as `swa_utils.update_bn` does) are left out, and so is a batch whose tensor
    a backward-reaching forward took (a metric on the training batch)."""

    def __init__(self) -> None:
        self.layers: Any = weakref.WeakKeyDictionary()  # root module -> [(name, BatchNorm layer)]
        self.recalibrated: Any = weakref.WeakSet()  # layers reset after the first step
        self.pending: list[dict] = []  # grad-enabled forwards awaiting a backward
        self.overlap: dict[tuple[int, int], bool] = {}  # (optimizer, module) -> optimizer holds its parameters
        self.trained: list[int] = []  # data_ptr of the inputs of the last forwards a backward reached

    def install(self, m: Any, torch: Any) -> None:
        norm_base = torch.nn.modules.batchnorm._NormBase
        original = norm_base.reset_running_stats
        monitor = self

        @functools.wraps(original)
        def reset_running_stats(layer: Any) -> None:
            original(layer)
            if m.steps:  # BatchNorm's own __init__ resets too
                monitor.recalibrated.add(layer)

        m.patch(norm_base, "reset_running_stats", reset_running_stats)

    def first_forward(self, m: Any, module: Any, args: Any, site: Optional[list]) -> None:
        import torch

        norms = (torch.nn.modules.batchnorm._BatchNorm, torch.nn.SyncBatchNorm)
        found = [(name or type(module).__name__, sub) for name, sub in module.named_modules()
                 if isinstance(sub, norms) and sub.track_running_stats]
        if found:
            self.layers[module] = found

    def forward(self, m: Any, module: Any, args: Any, output: Any, root: bool) -> None:
        if not root or not module.training:
            return
        layers = self.layers.get(module)
        if not layers:
            return
        updating = [name for name, layer in layers if layer.training and layer.momentum is not None
                    and layer.running_mean is not None and layer not in self.recalibrated]
        trains = m.notes.get("optimized")
        if not updating or trains is None or not any(trains(p) for p in module.parameters()):
            return
        import torch

        inputs = m.tensors(args)
        batch = inputs[0].data_ptr() if inputs else None
        if not torch.is_grad_enabled():
            if m.steps and (batch is None or batch not in self.trained):
                mode = "inference_mode" if torch.is_inference_mode_enabled() else "no_grad"
                m.record("bn_stats", m.user.site(3), module=type(module).__name__, layers=updating, mode=mode)
            return
        outputs = [t for t in m.tensors(output) if t.requires_grad]
        if not outputs:
            return
        # Before the first step too: a forward a backward reaches marks its batch as training data.
        entry = {"ref": weakref.ref(module), "site": m.user.site(3), "layers": updating, "reached": False,
                 "batch": batch, "late": bool(m.steps)}

        def reached(grad: Any) -> None:
            entry["reached"] = True

        entry["handle"] = outputs[0].register_hook(reached)  # the hook fires only if a backward gets there
        self.pending.append(entry)
        if len(self.pending) > 64:
            self.pending[:-64] = []

    def step(self, m: Any, optimizer: Any, site: Optional[list], event: dict) -> None:
        """The pending forwards of the models this optimizer trains are settled: a forward no
        backward reached fed its batch to the running statistics only."""
        kept = []
        for entry in self.pending:
            module = entry["ref"]()
            if module is None:
                continue
            if entry["reached"] or not self.trains(optimizer, module):
                if entry["reached"]:
                    entry["handle"].remove()
                    self.trained = [*self.trained[-15:], entry["batch"]]
                else:
                    kept.append(entry)
                continue
            entry["handle"].remove()
            if entry["late"] and (entry["batch"] is None or entry["batch"] not in self.trained):
                m.record("bn_stats", entry["site"], module=type(module).__name__, layers=entry["layers"],
                         mode="unreached")
        self.pending = kept

    def trains(self, optimizer: Any, module: Any) -> bool:
        key = (id(optimizer), id(module))
        known = self.overlap.get(key)
        if known is None:
            ids = {id(p) for group in optimizer.param_groups for p in group["params"]}
            known = self.overlap[key] = any(id(p) in ids for p in module.parameters())
        return known


class BatchNormUpdatedOutsideTraining(RuntimeCheck):
    """Runtime-only check: reported by `torchlint run` and `monitored()`, at the model's call.

    ## What it does
    Once training has begun (after the first optimizer step), reports the forwards of a model
    that trains (its parameters are in an optimizer) in train mode, with BatchNorm layers that
    track running statistics, whose batch never reaches a backward: a forward under
    `torch.no_grad()` or `torch.inference_mode()`, or one with grad enabled whose output no
    backward reached before an optimizer next stepped over the model (a validation forward
    without `no_grad`). A recalibration of the statistics is not reported:
    `torch.optim.swa_utils.update_bn`, or any loop that sets the layers' `momentum` to `None`
    or calls `reset_running_stats()` first. Neither are an EMA or teacher copy that no
    optimizer trains, BatchNorm layers put in eval mode on their own (frozen BatchNorm), and a
    forward on the very batch tensor a training forward took (accuracy on the training batch).

    ## Why is this bad?
    In train mode BatchNorm normalises with the batch's own statistics and folds them into its
    running mean and variance, `no_grad` or not. A validation loop that forgets `model.eval()`
    reports metrics computed with batch statistics, and leaves running statistics that describe
    the validation data (or a small last batch): the checkpoint saved after it evaluates
    differently from the model that was trained, and the next epoch starts from shifted
    statistics. Nothing fails.

    ## Example
    ```python
    for epoch in range(epochs):
        model.train()
        train_one_epoch(model, train_loader, opt)
        with torch.no_grad():                 # model.eval() forgotten
            accuracy = evaluate(model, val_loader)
    ```

    ## Use instead
    ```python
    for epoch in range(epochs):
        model.train()
        train_one_epoch(model, train_loader, opt)
        model.eval()
        with torch.no_grad():
            accuracy = evaluate(model, val_loader)
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [torch.nn.BatchNorm2d](https://pytorch.org/docs/stable/generated/torch.nn.BatchNorm2d.html)
    - [Module.eval](https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.eval)
    - [torch.optim.swa_utils.update_bn](https://pytorch.org/docs/stable/optim.html#weight-averaging-swa-and-ema)
    """

    code = "TL721"
    name = "batchnorm-updated-outside-training"
    summary = "A forward in train mode whose batch never reaches a backward updated BatchNorm statistics"
    seen = "validation batches folded into BatchNorm running statistics (train mode)"
    monitor = BatchNormStatsMonitor
    severity = "warning"

    @classmethod
    def problems(cls, obs: run.Observation, static: list[Finding], cwd: Path) -> list[run.RuntimeProblem]:
        """The run's findings of this check."""
        seen: dict[Any, dict] = {}
        for e in obs.by_kind["bn_stats"]:
            seen.setdefault(run.site_key(e["site"]), e)
        out = []
        for e in seen.values():
            how = {"no_grad": "under no_grad", "inference_mode": "under inference_mode",
                   "unreached": "with an output no backward reached"}[e["mode"]]
            runs = sum(1 for other in obs.by_kind["bn_stats"] if run.site_key(other["site"]) == run.site_key(e["site"]))
            layers = ", ".join(f"`{n}`" for n in e["layers"][:4]) + (", ..." if len(e["layers"]) > 4 else "")
            out.append(run.RuntimeProblem(cls.code, e["site"],
                                          f"{e['module']} ran in train mode {how} ({runs} time(s) after training began): "
                                          f"its BatchNorm layer(s) {layers} folded these batches into their running "
                                          f"statistics (call model.eval() before evaluating)"))
        return out
