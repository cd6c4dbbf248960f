"""TL221: a runtime check of `torchlint run` (the run's monitors and judges decide it)."""

from __future__ import annotations

from torchlint.runtime.checks import RuntimeCheck


class LabelUnusableByLoss(RuntimeCheck):
    """Runtime-only check: reported by `torchlint run` and `check_training_step`, at the loss call.

    ## What it does
    At each `cross_entropy` / `nll_loss` call (functional or `nn.CrossEntropyLoss` /
    `nn.NLLLoss`), checks the labels the loss actually receives: class indices must lie in
    `0..C-1` (or equal `ignore_index`), where C is the input's class dimension; a target with the
    class-index shape must have an integer dtype the loss accepts; a floating-point target shaped
    like the input is read as class probabilities and must lie in [0, 1]. For
    `binary_cross_entropy(_with_logits)` the targets must lie in [0, 1]. Reports the observed
    dtype, shape and value range, and the error torch raised, if any.

    ## Why is this bad?
    On the CPU an out-of-range label raises `IndexError: Target 5 is out of bounds`; on CUDA it is
    a device-side assert that kills the process with a message that names no line. Labels numbered
    from 1 instead of 0, a class count off by one, or a padding value that is not `ignore_index`
    are the usual causes. BCE targets outside [0, 1] raise no error at all: the loss is simply
    wrong, and can go negative.

    A float cast of the labels where the code shows it is reported by TL201 instead.

    ## Example
    ```python
    labels = torch.tensor(df["class"].values)   # classes numbered 1..10
    loss = F.cross_entropy(logits, labels)       # logits have 10 columns
    ```

    ## Use instead
    ```python
    labels = torch.tensor(df["class"].values) - 1   # 0..9
    loss = F.cross_entropy(logits, labels)
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [torch.nn.CrossEntropyLoss](https://pytorch.org/docs/stable/generated/torch.nn.CrossEntropyLoss.html)
    - [torch.nn.BCEWithLogitsLoss](https://pytorch.org/docs/stable/generated/torch.nn.BCEWithLogitsLoss.html)
    """

    code = "TL221"
    name = "label-unusable-by-loss"
    summary = "Labels with a dtype or a value range the loss cannot use"
    seen = "labels out of `0..C-1`, of a dtype the loss rejects, or BCE targets outside [0, 1]"
