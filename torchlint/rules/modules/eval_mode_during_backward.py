"""TL720: a runtime check of `torchlint run` (the run's monitors and judges decide it)."""

from __future__ import annotations

from torchlint.runtime.checks import RuntimeCheck


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
    without a matching `model.train()` before the next epoch (see TL704 for the static side).

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
    severity = "warning"
