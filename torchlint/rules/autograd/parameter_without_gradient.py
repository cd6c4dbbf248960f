"""TL120: a runtime check of `torchlint run` (the run's monitors and judges decide it)."""

from __future__ import annotations

from torchlint.runtime.checks import RuntimeCheck


class ParameterWithoutGradient(RuntimeCheck):
    """Runtime-only check: reported by `torchlint run` and `check_training_step`, at the
    `optimizer.step()` call.

    ## What it does
    At every optimizer step it looks at the parameters the optimizer updates that have
    `requires_grad=True`, and reports those whose `.grad` was still `None` at **every** observed
    step: they never took part in a loss that was backpropagated. It also reports plain tensors
    (not `nn.Parameter`) given to the optimizer with `requires_grad=False`: a forgotten
    `requires_grad=True`, since nothing can ever give them a gradient.

    ## Why is this bad?
    A parameter that never receives a gradient never learns. The usual causes are a layer built
    in `__init__` but never called in `forward` (a dead branch), an output that is computed but
    left out of the loss, or a `.detach()` / `torch.no_grad()` that cuts the graph before it. Under
    DDP the same layer makes `find_unused_parameters=False` fail, and turning that flag on only
    hides the dead branch while it costs an extra graph traversal each step. `nn.Parameter`s with
    `requires_grad=False` (deliberately frozen) are not reported.

    ## Example
    ```python
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(8, 16)
            self.head = nn.Linear(16, 3)
            self.aux_head = nn.Linear(16, 3)  # never used in forward

        def forward(self, x):
            return self.head(self.body(x).relu())
    ```

    ## Use instead
    ```python
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(8, 16)
            self.head = nn.Linear(16, 3)

        def forward(self, x):
            return self.head(self.body(x).relu())
    ```
    Or freeze what must not train (`p.requires_grad_(False)`) and leave it out of the optimizer.

    ## Fix safety
    No automatic fix: only the author knows whether the branch is dead or the loss is incomplete.

    ## References
    - [DistributedDataParallel: find_unused_parameters](https://pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html)
    - [Autograd mechanics](https://pytorch.org/docs/stable/notes/autograd.html)
    """

    code = "TL120"
    name = "parameter-without-gradient"
    summary = "Parameters the optimizer updates received no gradient in any observed step"
    seen = "parameters the optimizer updates never received a gradient"
    severity = "warning"
