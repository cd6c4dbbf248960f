"""TL222: a runtime check of `torchlint run` (the run's monitors and judges decide it)."""

from __future__ import annotations

from torchlint.runtime.checks import RuntimeCheck


class MixedParameterDtypes(RuntimeCheck):
    """Runtime-only check: reported by `torchlint run` and `check_training_step`, at the call of the
    model.

    ## What it does
    At the first forward of each top-level module, counts its floating-point parameters by dtype
    and reports a model whose parameters mix dtypes (for example float32 and float64), with a few
    parameter names of each dtype.

    The mixed-precision recipe is not reported: bfloat16/float16 weights whose only float32
    parameters belong to normalization layers (`LayerNorm`, `BatchNorm*`, `GroupNorm`,
    `RMSNorm`, or your own `...Norm` subclass) kept in fp32 on purpose.

    ## Why is this bad?
    Matmuls between tensors of different dtypes raise (`mat1 and mat2 must have the same dtype`)
    or, through type promotion in elementwise ops, silently run part of the model in float64 at a
    fraction of the speed. It usually comes from one layer built from a NumPy float64 array, a
    `.double()` left from debugging, or a partial `.half()`. Keeping a few layers in float32 on
    purpose inside a low-precision model is legitimate; `torch.autocast` is the supported way to
    run mixed precision with float32 master weights.

    ## Example
    ```python
    model = Net()
    model.head.weight = nn.Parameter(torch.from_numpy(init_matrix))  # float64
    ```

    ## Use instead
    ```python
    model.head.weight = nn.Parameter(torch.from_numpy(init_matrix).float())
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [Automatic mixed precision](https://pytorch.org/docs/stable/amp.html)
    - [Module.to](https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.to)
    """

    code = "TL222"
    name = "mixed-parameter-dtypes"
    summary = "The model's floating-point parameters have mixed dtypes"
    seen = "floating-point parameters of mixed dtypes"
    severity = "warning"
