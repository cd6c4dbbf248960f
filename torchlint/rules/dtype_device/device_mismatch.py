"""TL220: a runtime check of `torchlint run` (the run's monitors and judges decide it)."""

from __future__ import annotations

from torchlint.runtime.checks import RuntimeCheck


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
    seen = "the model's parameters and its input on different devices"
