"""TL222: a runtime check of `torchlint run`, with its monitor (what the program records) and judge."""

from __future__ import annotations


from torchlint.diagnostics import Finding
import torchlint.runtime.judging as run
from torchlint.runtime.checks import RuntimeCheck

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional
    from pathlib import Path


class MixedDtypeMonitor:
    """At a module's first root forward: floating-point parameters of more than one dtype,
    unless they are the mixed-precision recipe (low-precision weights, fp32 norm layers)."""

    def first_forward(self, m: Any, module: Any, args: Any, site: Optional[list]) -> None:
        dtypes: dict[str, int] = {}
        for p in module.parameters():
            if p.dtype.is_floating_point:
                dtypes[str(p.dtype)] = dtypes.get(str(p.dtype), 0) + 1
        if len(dtypes) > 1 and not self.fp32_norms_only(module, dtypes):
            by_dtype: dict[str, list[str]] = {}
            for name, p in module.named_parameters():
                by_dtype.setdefault(str(p.dtype), []).append(name)
            m.record("mixed_dtypes", site, module=type(module).__name__, dtypes=dtypes,
                     examples={k: v[:3] for k, v in by_dtype.items()}, always=True)

    @staticmethod
    def fp32_norms_only(module: Any, dtypes: dict[str, int]) -> bool:
        """Low-precision weights with float32 normalization layers: the mixed-precision recipe
        (norm statistics kept in fp32), not a forgotten cast."""
        if set(dtypes) - {"torch.float32", "torch.bfloat16", "torch.float16"} or "torch.float32" not in dtypes:
            return False
        for sub in module.modules():
            is_norm = "Norm" in type(sub).__name__
            for p in sub.parameters(recurse=False):
                if str(p.dtype) == "torch.float32" and not is_norm:
                    return False
        return True


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
    monitor = MixedDtypeMonitor
    severity = "warning"

    @classmethod
    def problems(cls, obs: run.Observation, static: list[Finding], cwd: Path) -> list[run.RuntimeProblem]:
        """The run's findings of this check."""
        out = []
        for e in obs.by_kind["mixed_dtypes"]:
            counts = ", ".join(f"{n} {d}" for d, n in sorted(e["dtypes"].items()))
            examples = "; ".join(f"{d}: {', '.join(names)}" for d, names in sorted(e["examples"].items()))
            out.append(run.RuntimeProblem(cls.code, e["site"], f"{e['module']} has floating-point parameters of mixed dtypes "
                                                              f"({counts}) at its first forward ({examples})"))
        return out
