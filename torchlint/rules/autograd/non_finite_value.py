"""TL121: a runtime check of `torchlint run` (the run's monitors and judges decide it)."""

from __future__ import annotations

from torchlint.runtime.checks import RuntimeCheck


class NonFiniteValue(RuntimeCheck):
    """Runtime-only check: reported by `torchlint run` and `check_training_step`.

    ## What it does
    Checks, during the observed steps, every module's forward output, the loss at `backward()`,
    and every gradient at `optimizer.step()`, and reports the **first** place a NaN or Inf
    appears: the module (and its name in the model), whether its inputs and its own parameters
    were still finite (so whether that layer produced it or received it), and the step.

    A `-inf` with no NaN and no `+inf` beside it is a mask (a causal attention mask, invalid
    actions in a policy), which a softmax or `masked_fill` turns into 0: it is not reported
    where it appears. It is reported, with the module that first held it, only if a NaN/Inf then
    reaches a later activation, the loss or a gradient, that is, only if it affects the training.

    ## Why is this bad?
    One NaN spreads through every later operation: the loss becomes NaN, the gradients become
    NaN, and after one optimizer step every weight is NaN. By the time the loss prints `nan` the
    origin is gone. Typical origins are `log`/`sqrt`/division of a value that reaches 0 or goes
    negative, an exploding activation in float16, or a learning rate that blows up the weights.
    `torch.autograd.detect_anomaly` finds NaNs produced in backward only, and slows every op.

    ## Example
    ```python
    class Net(nn.Module):
        def forward(self, x):
            return torch.log(self.linear(x))  # log of negative values is NaN
    ```

    ## Use instead
    ```python
    class Net(nn.Module):
        def forward(self, x):
            return F.log_softmax(self.linear(x), dim=-1)  # numerically stable
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [torch.autograd.detect_anomaly](https://pytorch.org/docs/stable/autograd.html#anomaly-detection)
    - [torch.isfinite](https://pytorch.org/docs/stable/generated/torch.isfinite.html)
    """

    code = "TL121"
    name = "non-finite-value"
    summary = "NaN or Inf first appeared in an activation, the loss or a gradient"
    seen = "where NaN/Inf first appeared: which layer, the loss or a gradient"
