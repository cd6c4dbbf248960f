"""TL123: a runtime check of `torchlint run`, with its monitor (what the program records) and judge."""

from __future__ import annotations

from collections import defaultdict
import functools
import weakref

from torchlint.diagnostics import Finding
import torchlint.runtime.judging as run
from torchlint.runtime.checks import RuntimeCheck

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional
    from pathlib import Path


class UnoptimizedParameterMonitor:
    """Every parameter any optimizer was given (`add_param_group`, construction included), and,
    at the first CHECKED optimizer steps, the parameters of the root modules that hold a
    gradient but are in no optimizer (modules in eval mode left out: a teacher). Those still in
    no optimizer are added to the `counts` event as `unoptimized` (the judge reads the last)."""

    CHECKED = 10  # steps of the process; later steps cost nothing

    def __init__(self) -> None:
        self.optimized: dict[int, Any] = {}  # id(param) -> weakref (tensors compare elementwise)
        self.sites: Any = weakref.WeakKeyDictionary()  # optimizer -> where the program built it
        self.candidates: dict[int, dict] = {}
        self.steps_checked = 0
        # id(module) -> (weakref, storage pointers of the state it was loaded from): a target
        # network (`q_target.load_state_dict(q.state_dict())`) is updated by copying, not stepped.
        self.loaded: dict[int, tuple[Any, frozenset]] = {}

    def install(self, m: Any, torch: Any) -> None:
        original = torch.optim.Optimizer.add_param_group
        monitor = self
        m.notes["optimized"] = self.is_optimized  # batchnorm-updated-outside-training asks whether a module trains

        @functools.wraps(original)
        def add_param_group(optimizer: Any, param_group: Any) -> Any:
            result = original(optimizer, param_group)
            try:
                if optimizer not in monitor.sites:
                    monitor.sites[optimizer] = m.user.site(2)
                monitor.note(optimizer.param_groups[-1]["params"])
            except Exception as exc:
                m.internal_error("UnoptimizedParameterMonitor.add_param_group", exc)
            return result

        m.patch(torch.optim.Optimizer, "add_param_group", add_param_group)
        original_load = torch.nn.Module.load_state_dict

        @functools.wraps(original_load)
        def load_state_dict(module: Any, state_dict: Any, *args: Any, **kwargs: Any) -> Any:
            result = original_load(module, state_dict, *args, **kwargs)
            try:
                ptrs = frozenset(v.data_ptr() for v in state_dict.values() if isinstance(v, torch.Tensor))
                monitor.loaded[id(module)] = (weakref.ref(module), ptrs)
            except Exception as exc:
                m.internal_error("UnoptimizedParameterMonitor.load_state_dict", exc)
            return result

        m.patch(torch.nn.Module, "load_state_dict", load_state_dict)

    def note(self, params: Any) -> None:
        for p in params:
            self.optimized[id(p)] = weakref.ref(p)
            self.candidates.pop(id(p), None)

    def is_optimized(self, p: Any) -> bool:
        ref = self.optimized.get(id(p))
        return ref is not None and ref() is p

    def step(self, m: Any, optimizer: Any, site: Optional[list], event: dict) -> None:
        if optimizer not in self.sites:  # built before the monitors, or add_param_group overridden
            self.sites[optimizer] = None
            self.note(p for group in optimizer.param_groups for p in group["params"])
        if self.steps_checked >= self.CHECKED:
            return
        self.steps_checked += 1
        for root in list(m.roots or ()):
            if self.copies_optimized(root):
                continue
            found = {id(p): name for name, p in root.named_parameters()
                     if p.requires_grad and p.grad is not None and id(p) not in self.candidates
                     and not self.is_optimized(p)}
            if not found:
                continue
            for module in root.modules():  # a module in eval mode (a teacher) is not meant to train
                for p in module.parameters(recurse=False):
                    if id(p) in found and module.training:
                        self.candidates[id(p)] = {"name": found[id(p)], "module": type(root).__name__,
                                                  "site": self.sites.get(optimizer) or site,
                                                  "optimizer": type(optimizer).__name__}

    def copies_optimized(self, module: Any) -> bool:
        """Was `module` loaded from the live state of parameters an optimizer steps (a target
        network)? `state_dict()` shares their storage; a checkpoint from disk does not."""
        entry = self.loaded.get(id(module))
        if entry is None or entry[0]() is not module:
            return False
        live = {ref().data_ptr() for ref in self.optimized.values() if ref() is not None}
        return bool(entry[1] & live)

    def dump(self, m: Any, event: dict) -> None:
        if self.candidates:
            event["unoptimized"] = list(self.candidates.values())


class ParameterNotOptimized(RuntimeCheck):
    """Runtime-only check: reported by `torchlint run` and `monitored()`, at the optimizer's
    construction.

    ## What it does
    Records every parameter given to an optimizer (at construction or by `add_param_group`),
    and at the first 10 optimizer steps looks at the parameters of the model(s) the program
    ran: it reports those that require grad and received a gradient, yet are in no optimizer's
    param groups at the end of the run. Parameters frozen with `requires_grad=False`, those of
    a second optimizer (a GAN's discriminator), an EMA or `AveragedModel` copy updated under
    `no_grad` (no gradient), a target network loaded from the trained model's live state
    (`q_target.load_state_dict(q.state_dict())`, which gradients may reach through an
    undetached target but which is updated by copying), and modules in eval mode (a
    distillation teacher) are not reported.

    ## Why is this bad?
    The backward computes and stores their gradients every step, but nothing ever applies them:
    that part of the model stays at its initialisation while the loss, driven by the rest,
    still goes down. The usual causes are an optimizer built from one sub-module
    (`Adam(encoder.parameters())` while the decoder also trains), a layer replaced or added
    after the optimizer was built (a new classification head), or a filter over
    `named_parameters()` that drops more than meant. A layer that is meant to stay fixed should
    say so with `requires_grad_(False)`, which also saves the backward's work.

    ## Example
    ```python
    model = resnet18()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model.fc = nn.Linear(512, 10)  # a new head, built after the optimizer took the old one
    ```

    ## Use instead
    ```python
    model = resnet18()
    model.fc = nn.Linear(512, 10)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [torch.optim: per-parameter options](https://pytorch.org/docs/stable/optim.html#per-parameter-options)
    - [Optimizer.add_param_group](https://pytorch.org/docs/stable/generated/torch.optim.Optimizer.add_param_group.html)
    """

    code = "TL123"
    name = "parameter-not-optimized"
    summary = "Parameters received gradients but are in no optimizer's param groups"
    seen = "trainable parameters with gradients that no optimizer updates"
    monitor = UnoptimizedParameterMonitor
    severity = "warning"

    @classmethod
    def problems(cls, obs: run.Observation, static: list[Finding], cwd: Path) -> list[run.RuntimeProblem]:
        """The run's findings of this check."""
        last: dict[Any, dict] = {}
        for e in obs.by_kind["counts"]:
            last[e["pid"]] = e
        by_site: dict[Any, list[dict]] = defaultdict(list)
        for dump in last.values():
            for c in dump.get("unoptimized") or ():
                by_site[(tuple(c["site"][:2]) if c["site"] else None, dump["pid"])].append(c)
        out = []
        for found in by_site.values():
            names = [c["name"] for c in found]
            shown = ", ".join(f"`{n}`" for n in names[:6]) + (", ..." if len(names) > 6 else "")
            out.append(run.RuntimeProblem(cls.code, found[0]["site"],
                                          f"{len(names)} parameter(s) of {found[0]['module']} received gradients but "
                                          f"are in no optimizer's param groups ({found[0]['optimizer']} stepped without "
                                          f"them), so they never change: {shown}"))
        return out
