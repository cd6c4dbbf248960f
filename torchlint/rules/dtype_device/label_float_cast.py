"""TL201: a float-cast tensor passed as the target of a class-index loss."""

from __future__ import annotations

import ast



from torchlint.analysis.torch_api import (CLASS_INDEX_LOSS_CLASSES, CLASS_INDEX_LOSS_FUNCTIONS,
                                          float_cast, receiver_chain)
from torchlint.analysis.losses import LossCalls
from torchlint.checker import FileContext
from torchlint.rules.base import Evidence, Rule, Violation, arg_or_keyword
from torchlint.records import RuntimeResult
import torchlint.runtime.judging as run

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable, Optional
    from pathlib import Path

# A float target built from these is a deliberate probability distribution.
_PROBABILITY_SOURCES = frozenset({"one_hot", "softmax", "log_softmax", "sigmoid", "softmin"})


def run_verdict(obs: run.Observation, path: str, rows: tuple[int, int], cwd: Path) -> RuntimeResult:
    """What the run shows: the target's dtype and shape at the loss, the error or the probability reading."""
    calls = run.loss_calls(obs, path, rows, run.CLASS_INDEX_LOSSES)
    if not calls:
        return run.not_reached("no cross_entropy/nll_loss call ran at or after this line in this function")
    for e in calls:
        if run.is_float(e.get("target")):
            target = e["target"]
            head = (f"at step {e['step']}, the target reaching {e['fn']} at {run.where(e['site'], cwd)} was "
                    f"{target['dtype']} of shape {run.shape(target)} (input {run.shape(e['input'])})")
            if e.get("error"):
                return run.verdict("confirmed", f"{head}: {e['error']}", len(calls))
            if not e.get("class_index"):
                sums = e.get("row_sums")
                detail = f" (first rows sum to {sums})" if sums else ""
                return run.verdict("confirmed", f"{head}: read as class probabilities, not class indices{detail}",
                                   len(calls))
    dtypes = sorted({e["target"]["dtype"] for e in calls if e.get("target")})
    return run.verdict("not-observed", f"ran {len(calls)} time(s); the target reaching the loss was "
                                       f"{', '.join(dtypes) or 'not a tensor'}", len(calls))


# -- evidence (runs only in the --verify worker: see CONTRIBUTING.md) ----------------------
def probe_label_float_cast(params: dict, device: str) -> tuple[str, str]:
    import torch
    import torch.nn.functional as F
    from _evidence import first_line, raises

    dtypes = {"torch.float32": torch.float32, "torch.float64": torch.float64,
              "torch.float16": torch.float16, "torch.bfloat16": torch.bfloat16}
    dtype = dtypes.get(params.get("dtype", "torch.float32"), torch.float32)
    loss_name = params.get("loss", "F.cross_entropy")
    logits = torch.randn(4, 3, device=device)
    labels = torch.tensor([0, 2, 1, 2], device=device)
    if "nll" in loss_name.lower():
        fn: Callable = lambda inp, t: F.nll_loss(F.log_softmax(inp, dim=1), t)  # noqa: E731
    else:
        fn = F.cross_entropy
    exc = raises(lambda: fn(logits.to(dtype) if dtype != torch.float64 else logits.double(), labels.to(dtype)))
    big = 2**24 + 1
    back = int(torch.tensor([big]).to(torch.float32).long().item())
    precision = f"; label {big} comes back as {back} after float32" if back != big else ""
    if exc is not None and "dtype" in str(exc).lower() or exc is not None and "Long" in str(exc):
        return "confirmed", f"{loss_name} with {dtype} targets: {first_line(exc)}{precision}"
    return "not-reproduced", f"{loss_name} accepted {dtype} class-index targets{precision}"


def judge_label_float_cast(facts: dict, runs: list) -> Optional[tuple[str, str]]:
    import torch
    from _evidence import describe, first_line, flag

    rec = flag(runs)
    if rec is None:
        return None
    args = rec["args"]
    target = args[1] if len(args) > 1 else rec["kwargs"].get("target")
    inp = args[0] if args else rec["kwargs"].get("input")
    shapes = f"input {describe(inp)}, target {describe(target)}"
    exc = rec.get("exc")
    if exc is not None and ("dtype" in str(exc) or "Long" in str(exc)):
        return "confirmed", f"the loss call got {shapes} and raised {first_line(exc)}"
    if exc is not None:
        return "error", f"the loss call got {shapes} and raised an unrelated {first_line(exc)}"
    value = rec.get("value")
    loss = f"{float(value):.4g}" if isinstance(value, torch.Tensor) and value.numel() == 1 else describe(value)
    big = isinstance(target, torch.Tensor) and target.dtype == torch.float32 and target.numel() and \
        float(target.abs().max()) > 2**24
    if big:
        return "confirmed", f"the loss ran with {shapes}, but target values above 2**24 lost precision in float32"
    return "not-reproduced", f"the loss ran with {shapes} (loss {loss}): the float target is valid here"


class FloatCastClassTarget(Violation):
    loss: str  # `F.cross_entropy`
    dtype: str
    help = "Pass the labels as `.long()`"

    def message(self) -> str:
        return f"Target of `{self.loss}` is cast to {self.dtype}; class indices must stay int64"


class LabelFloatCast(Rule):
    """## What it does
    Flags a float cast (`.float()`, `.double()`, `.half()`, `.bfloat16()`, `.to(<float dtype>)`,
    `.type(torch.FloatTensor)`, `torch.tensor(..., dtype=<float>)`) of the tensor passed as the
    target of a class-index loss: `nn.CrossEntropyLoss` / `nn.NLLLoss` instances constructed in
    the same file, `F.cross_entropy`, `F.nll_loss`; directly or through a local variable
    assigned from the cast.

    ## Why is this bad?
    These losses take class *indices* (int64). It is not merely a precision issue:

    - with a class-index shaped target `(N,)`, torch raises
      `RuntimeError: expected target dtype to be Long or Byte, but got Float` (torch 2.13;
      older releases say `expected scalar type Long but found Float`);
    - with a float target of shape `(N, C)`, torch silently reads it as class
      **probabilities**, a different loss;
    - integer labels above 2**24 are not exactly representable in float32, so large
      vocabularies also lose labels.

    Targets of BCE/MSE and other regression losses, and float targets built deliberately as
    probabilities (`F.one_hot(y, C).float()`, a softmax), are not flagged.

    ## Example
    ```python
    loss = F.cross_entropy(logits, labels.float())
    ```

    ## Use instead
    ```python
    loss = F.cross_entropy(logits, labels.long())
    ```

    ## Fix safety
    No automatic fix: if the float target is meant as class probabilities, the shape decides.

    ## References
    - [torch.nn.CrossEntropyLoss](https://pytorch.org/docs/stable/generated/torch.nn.CrossEntropyLoss.html)
    """

    code = "TL201"
    name = "label-float-cast"
    summary = "Float-cast labels passed as the target of CrossEntropyLoss/NLLLoss"
    severity = "error"
    tags = ("correctness", "dtype", "loss")
    requires_text = ('cross_entropy', 'nll_loss', 'CrossEntropyLoss', 'NLLLoss')
    evidence = Evidence(probe=probe_label_float_cast, slice="target-of-consumer", judge=judge_label_float_cast,
                        runtime=run_verdict,
                        crash=r"expected scalar type Long|[Ee]xpected .*target.* (Long|Int)|target dtype to be Long|"
                               r"not implemented for 'Float'|Expected floating point type for target")

    def setup(self, ctx: FileContext) -> None:
        self.losses = LossCalls(CLASS_INDEX_LOSS_CLASSES, CLASS_INDEX_LOSS_FUNCTIONS)

    def visit_Assign(self, node: ast.Assign, ctx: FileContext) -> None:
        self.losses.record(node, ctx)

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        if len(node.args) < 2 and not any(k.arg == "target" for k in node.keywords):
            return
        loss = self.losses.match(node, ctx)
        if loss is None:
            return
        target = arg_or_keyword(node, 1, "target")
        found = self._float_cast_of(target, node.lineno, ctx) if target is not None else None
        if found is not None:
            self._report(loss, found)

    def _report(self, qualified_loss: str, found: tuple[ast.Call, str]) -> None:
        cast, dtype = found
        loss = qualified_loss.replace("torch.nn.functional.", "F.").replace("torch.nn.", "nn.")
        self.report(cast, FloatCastClassTarget(loss=loss, dtype=dtype), params={"dtype": dtype, "loss": loss})

    def _float_cast_of(self, target: ast.AST, lineno: int, ctx: FileContext) -> Optional[tuple[ast.Call, str]]:
        if isinstance(target, ast.Name):
            target = ctx.value_before(target, lineno)  # type: ignore[assignment]
            if target is None:
                return None
        dtype = float_cast(target, ctx)
        if dtype is None:
            return None
        for link in receiver_chain(target)[1:]:
            if isinstance(link, ast.Call):
                func = link.func
                last = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
                if last in _PROBABILITY_SOURCES:
                    return None
        return target, dtype  # type: ignore[return-value]
