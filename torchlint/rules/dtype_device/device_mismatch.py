"""TL220: a runtime check of `torchlint run`, with its monitor (what the program records) and judge."""

from __future__ import annotations


from torchlint.diagnostics import Finding
import torchlint.runtime.judging as run
from torchlint.runtime.checks import RuntimeCheck

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional
    from pathlib import Path


class DeviceMismatchMonitor:
    """At a module's first root forward: its parameters all on one device and its inputs on
    another."""

    def first_forward(self, m: Any, module: Any, args: Any, site: Optional[list]) -> None:
        params = list(module.parameters())
        if not params:
            return
        param_devices = sorted({str(p.device) for p in params})
        input_devices = sorted({str(t.device) for t in m.tensors(args)})
        if input_devices and len(param_devices) == 1 and input_devices != param_devices:
            m.record("device_mismatch", site, module=type(module).__name__, params=param_devices,
                     inputs=input_devices, always=True)


class DeviceMismatch(RuntimeCheck):
    """Runtime-only check: reported by `torchlint run` and `check_training_step`, at the call of the
    model.

    ## What it does
    At the first forward of each top-level module the program calls, compares the device of the
    module's parameters (when they all sit on one device) with the devices of the tensors passed
    to it, and reports a mismatch: parameters on `cuda:0` and a batch on `cpu`, or the reverse.

    ## Why is this bad?
    The forward fails with `RuntimeError: Expected all tensors to be on the same device`, or,
    when a module moves its input itself, every step pays an implicit copy. The usual causes are a
    batch never moved with `.to(device)`, a model moved after the optimizer was built, or a
    `device` variable computed differently in two places.

    ## Example
    ```python
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Net().to(device)
    for x, y in loader:
        out = model(x)  # x is still on the CPU
    ```

    ## Use instead
    ```python
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        out = model(x)
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [Tensor.to](https://pytorch.org/docs/stable/generated/torch.Tensor.to.html)
    - [CUDA semantics](https://pytorch.org/docs/stable/notes/cuda.html)
    """

    code = "TL220"
    name = "device-mismatch"
    summary = "The model's parameters and its input are on different devices"
    peer_checks = {"TA202": "partly: TL220 reports parameters and input on different devices; a model deliberately on the CPU is not a defect", "TA300": "covered"}  # rules_docs/peer-parity.md
    seen = "the model's parameters and its input on different devices"
    monitor = DeviceMismatchMonitor

    @classmethod
    def problems(cls, obs: run.Observation, static: list[Finding], cwd: Path) -> list[run.RuntimeProblem]:
        """The run's findings of this check."""
        return [run.RuntimeProblem(cls.code, e["site"], f"{e['module']}'s parameters are on {', '.join(e['params'])} but "
                                                       f"its input is on {', '.join(e['inputs'])}")
                for e in obs.by_kind["device_mismatch"]]
