"""TL421: a runtime check of `torchlint run` (the run's monitors and judges decide it)."""

from __future__ import annotations

from torchlint.runtime.checks import RuntimeCheck


class LossDiverged(RuntimeCheck):
    """Runtime-only check: reported by `torchlint run` and `check_training_step`.

    ## What it does
    Follows the scalar loss given to each `backward()` call site and reports, once per site, the
    first loss that is finite but at least 10⁴ times the median magnitude of that site's first three
    losses (floored at 0.01, so a loss that converged near zero and wobbles is not reported): the
    value, the step and the first values. NaN and Inf are TL121's.

    ## Why is this bad?
    A diverging run need not produce NaN: with a learning rate far too high, a missing
    normalization or a sign error, the loss can climb from 2.3 to 6.6e15 and stay finite, so every
    NaN check passes and the run burns its budget training nothing. The weights have already
    left any useful region long before anyone reads the log.

    ## Example
    ```python
    opt = torch.optim.SGD(model.parameters(), lr=10.0)  # far too high for this model
    for x, y in loader:
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
    ```

    ## Use instead
    ```python
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [torch.nn.utils.clip_grad_norm_](https://pytorch.org/docs/stable/generated/torch.nn.utils.clip_grad_norm_.html)
    - [torch.optim: adjusting the learning rate](https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate)
    """

    code = "TL421"
    name = "loss-diverged"
    summary = "The loss grew by orders of magnitude over its first values while staying finite"
    seen = "a finite loss 10⁴ times its first values: the training diverged"
