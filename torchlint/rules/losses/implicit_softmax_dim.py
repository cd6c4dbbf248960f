"""TL403: softmax without an explicit `dim`."""

from __future__ import annotations

import ast



from torchlint.checker import FileContext
from torchlint.records import RuntimeResult
from torchlint.rules.base import Evidence, Rule, Violation, arg_or_keyword, has_star_kwargs, keyword
import torchlint.runtime.judging as run

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional
    from pathlib import Path


_FUNCS = frozenset({"torch.nn.functional.softmax", "torch.nn.functional.log_softmax",
                    "torch.nn.functional.softmin", "torch.softmax", "torch.log_softmax"})
# These take `dim` as a required argument and accept NumPy's `axis=` for it.
_NUMPY_ALIASES = frozenset({"torch.softmax", "torch.log_softmax"})
_MODULES = frozenset({"torch.nn.Softmax", "torch.nn.LogSoftmax", "torch.nn.Softmin"})


def run_verdict(obs: run.Observation, path: str, rows: tuple[int, int], cwd: Path) -> RuntimeResult:
    """What the run shows: the dimension softmax picked."""
    calls = [e for e in obs.by_kind["implicit_softmax"]
             if run.at(e["site"], path, rows) or run.at(e.get("module_site"), path, rows)]
    if not calls:
        return run.not_reached("no softmax without dim ran here")
    for e in calls:
        if e["implicit_dim"] == 0 and len(e["shape"]) > 1:
            return run.verdict("confirmed", f"at step {e['step']}, {e['fn']} got a {len(e['shape'])}-D input "
                                            f"{tuple(e['shape'])} and no dim, so it normalized over dim 0, the first "
                                            "dimension", len(calls))
    shapes = sorted({str(tuple(e["shape"])) for e in calls})
    return run.verdict("not-observed", f"ran {len(calls)} time(s) on inputs {', '.join(shapes[:3])}, where the implicit "
                                       "dim is the last (2-D) or the only one", len(calls))


class ImplicitDimMonitor:
    """Each softmax/log_softmax/softmin called without `dim`: the input's shape, the dim torch
    picked, and where the module calling it was built."""

    def softmax(self, m: Any, name: str, tensor: Any, dim: Any, caller: Any) -> None:
        if dim is not None or tensor is None or not hasattr(tensor, "dim"):
            return
        ndim = tensor.dim()
        owner = m.owner(caller)
        m.record("implicit_softmax", m.user.site(2), fn=name, shape=list(tensor.shape),
                 implicit_dim=0 if ndim in (0, 1, 3) else 1,
                 module_site=m.loss_sites.get(owner) if owner is not None else None)


# -- evidence (runs only in the --verify worker: see CONTRIBUTING.md) ----------------------
def probe_implicit_softmax_dim(params: dict, device: str) -> tuple[str, str]:
    import warnings

    import torch
    import torch.nn.functional as F

    x = torch.randn(2, 3, 4, device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the deprecation warning is not the evidence here
        p = F.softmax(x)  # noqa: TL403 - the hazard, on purpose
        flat = F.softmax(torch.randn(2, 3, device=device))  # noqa: TL403 - the hazard, on purpose
    sums = p.sum(dim=0)
    rows_ok = torch.allclose(flat.sum(dim=-1), torch.ones(2, device=device))
    if torch.allclose(sums, torch.ones_like(sums)):
        return ("confirmed", "the input's rank is unknown here: on a 3-D input the implicit dim is 0, so probabilities "
                             "sum to 1 across the batch; on a 1-D or 2-D input it is the last dim "
                             f"({'harmless' if rows_ok else 'not the last dim'})")
    return "not-reproduced", "softmax normalised the last dimension"


def judge_implicit_softmax_dim(facts: dict, runs: list) -> Optional[tuple[str, str]]:
    import torch
    from _evidence import failed, flag

    rec = flag(runs)
    if rec is None or failed(rec, "the call"):
        return failed(rec, "the call")
    x = rec["args"][0] if rec["args"] else rec["kwargs"].get("input")
    if not isinstance(x, torch.Tensor):
        return None
    ndim = x.dim()
    implicit = 0 if ndim in (0, 1, 3) else 1
    if ndim >= 2 and implicit == 0:
        return ("confirmed", f"the input has shape {tuple(x.shape)}: the implicit dim is 0, so the probabilities "
                             "sum to 1 across the first (batch) dimension, not per sample")
    return ("not-reproduced", f"the input has shape {tuple(x.shape)}: the implicit dim is {implicit}"
            + (", the last dimension, as intended" if implicit == max(ndim - 1, 0) else " (the channel dimension)"))


_DIM_HELP = "Pass `dim=-1` (or the class dimension)"


class AxisKeyword(Violation):
    function: str  # `F.softmax`
    help = "Write `dim=`"

    def message(self) -> str:
        return f"`{self.function}` raises on `axis=`: it has no such parameter"


class MissingRequiredDim(Violation):
    function: str  # `torch.softmax`, whose `dim` has no default
    help = _DIM_HELP

    def message(self) -> str:
        return f"`{self.function}` without `dim` raises: `dim` is required"


class ImplicitDim(Violation):
    call: str  # `F.softmax`, or `nn.Softmax()`
    help = _DIM_HELP

    def message(self) -> str:
        return f"`{self.call}` without `dim` picks a dimension from the input's rank (deprecated)"


class ImplicitSoftmaxDim(Rule):
    """On the 2026-12 held-out corpus (54 projects, independent triage), 1 of 7 findings were true;
    off by default. Enable it with `--extend-select TL403`.

    ## What it does
    Flags `F.softmax`, `F.log_softmax`, `F.softmin`, `torch.softmax`, `torch.log_softmax` and
    `nn.Softmax()/LogSoftmax()/Softmin()` without `dim`, and `F.softmax(x, axis=...)`.
    `torch.softmax(x, axis=1)` and `torch.log_softmax(x, axis=1)` are not flagged: those two
    accept NumPy's `axis=` as an alias of `dim` (checked on torch 2.13).

    ## Why is this bad?
    For the functional forms torch chooses the dimension implicitly and warns
    (`UserWarning: Implicit dimension choice for softmax has been deprecated`): dim 0 for 0-, 1-
    and 3-D input, dim 1 otherwise. For a 3-D `(batch, seq, classes)` tensor that normalises
    across the *batch*, silently wrong. `torch.softmax(x)` without `dim` raises `TypeError`
    (`missing 1 required positional arguments: "dim"`), and the functional forms reject `axis=`
    (`TypeError: softmax() got an unexpected keyword argument 'axis'`).

    ## Example
    ```python
    probs = F.softmax(logits)
    ```

    ## Use instead
    ```python
    probs = F.softmax(logits, dim=-1)
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [torch.nn.functional.softmax](https://pytorch.org/docs/stable/generated/torch.nn.functional.softmax.html)
    """

    code = "TL403"
    name = "implicit-softmax-dim"
    summary = "softmax/log_softmax/softmin without dim"
    severity = "warning"
    default_enabled = False
    tags = ("correctness", "deprecated")
    requires_text = ('softmax', 'Softmax', 'softmin', 'Softmin')
    precision = "very-high"

    evidence = Evidence(generic_probe=True, probe=probe_implicit_softmax_dim, slice="call", judge=judge_implicit_softmax_dim,
                        runtime=run_verdict, monitor=ImplicitDimMonitor,
                        crash=r"missing 1 required positional arguments?: .dim.|unexpected keyword argument .axis.")

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        name = ctx.call_name(node)
        if name is None or has_star_kwargs(node) or any(isinstance(a, ast.Starred) for a in node.args):
            return
        if name in _FUNCS:
            short = name.replace("torch.nn.functional.", "F.")
            axis = keyword(node, "axis")
            if axis is not None and name in _NUMPY_ALIASES:
                return  # torch.softmax(x, axis=1) is accepted: `axis` is an alias of `dim`
            if axis is not None:
                self.report(node, AxisKeyword(function=short))
                return
            if arg_or_keyword(node, 1, "dim") is not None:
                return
            if name in _NUMPY_ALIASES:
                self.report(node, MissingRequiredDim(function=short))
            else:
                self.report(node, ImplicitDim(call=short))
        elif name in _MODULES and arg_or_keyword(node, 0, "dim") is None:
            short = name.replace("torch.nn.", "nn.")
            self.report(node, ImplicitDim(call=f"{short}()"))
