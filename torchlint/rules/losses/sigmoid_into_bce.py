"""TL404: `sigmoid` then `BCELoss` (use `BCEWithLogitsLoss`), and raw logits fed to `BCELoss`."""

from __future__ import annotations

import ast

from torchlint.analysis.losses import LossCalls
from torchlint.checker import FileContext
from torchlint.rules.base import Evidence, Rule, Violation, arg_or_keyword

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional


def probe_sigmoid_bce(params: dict, device: str) -> tuple[str, str]:
    """`sigmoid` + `BCELoss` against `BCEWithLogitsLoss` on a confident wrong logit; raw
    logits into `BCELoss`. Facts: `input` ("sigmoid" or "logits"), and for the logits case
    whether the values already lie in [0, 1] (`in_unit_range`)."""
    import torch
    import torch.nn.functional as F

    if params.get("input", "sigmoid") == "logits":
        values = [0.2, 0.9] if params.get("in_unit_range") else [2.5, -1.0]
        try:
            F.binary_cross_entropy(torch.tensor(values, device=device), torch.tensor([1.0, 0.0], device=device))
        except RuntimeError as exc:
            return "confirmed", f"BCELoss on logits {values} raised RuntimeError: {str(exc).splitlines()[0]}"
        return "not-reproduced", f"BCELoss accepted the values {values}"
    logit = float(params.get("logit", 20.0))
    x = torch.tensor([logit], device=device, requires_grad=True)
    y = torch.tensor([0.0], device=device)
    F.binary_cross_entropy(torch.sigmoid(x), y).backward()
    grad_two_step = float(x.grad)  # type: ignore[arg-type]
    x.grad = None
    fused = F.binary_cross_entropy_with_logits(x, y)
    fused.backward()
    grad_fused = float(x.grad)  # type: ignore[arg-type]
    if abs(grad_two_step - grad_fused) > 1e-3 * max(1.0, abs(grad_fused)):
        return "confirmed", (f"logit {logit}, target 0: sigmoid+BCELoss gives gradient {grad_two_step:.4g}, "
                             f"BCEWithLogitsLoss {grad_fused:.4g} (loss {fused.item():.4g})")
    return "not-reproduced", f"logit {logit}: both give gradient {grad_fused:.4g}"


_SIGMOIDS = frozenset({"torch.sigmoid", "torch.nn.functional.sigmoid", "torch.special.expit"})
_LAYERS = {"torch.nn.Sigmoid": "sigmoid", "torch.nn.Linear": "linear"}
_RESHAPES = frozenset({"view", "reshape", "squeeze", "unsqueeze", "flatten", "float", "double", "contiguous"})


def _layer_kind(layer: Optional[ast.AST], ctx: FileContext) -> Optional[str]:
    """'sigmoid' / 'linear' for a layer that ends with one: `nn.Sigmoid()`, `nn.Linear(...)`,
    `nn.Sequential(..., nn.Sigmoid())`."""
    name = ctx.module_scope.imports.call_name(layer) if layer is not None else None
    if name in _LAYERS:
        return _LAYERS[name]  # type: ignore[index]
    if name == "torch.nn.Sequential" and layer.args and not isinstance(layer.args[-1], ast.Starred):  # type: ignore[union-attr]
        return _layer_kind(layer.args[-1], ctx)  # type: ignore[union-attr]
    return None


class BceAfterSigmoid(Violation):
    loss: str  # `F.binary_cross_entropy` / `nn.BCELoss`
    help = "Drop the sigmoid and use `BCEWithLogitsLoss` / `F.binary_cross_entropy_with_logits`"

    def message(self) -> str:
        return f"`{self.loss}` after `sigmoid`: confident wrong predictions saturate to zero gradient"


class BceOnLogits(Violation):
    loss: str
    help = "Use `BCEWithLogitsLoss` / `F.binary_cross_entropy_with_logits` on the logits"

    def message(self) -> str:
        return f"`{self.loss}` gets raw `nn.Linear` logits: it raises once a value leaves [0, 1]"


class SigmoidIntoBce(Rule):
    """On the 2026-12 held-out corpus (54 projects, independent triage), 0 of 2 findings were true (a
    fixed-constant teaching example, where saturation cannot happen); off by default. Enable it with
    `--extend-select TL404`.

    ## What it does
    Flags the input of `nn.BCELoss` / `F.binary_cross_entropy` when it is

    - a `sigmoid` result: `torch.sigmoid(x)`, `F.sigmoid(x)`, `x.sigmoid()`, `torch.special.expit`,
      directly or through a local variable, or the output of a layer of the same file that ends
      with `nn.Sigmoid` (`self.head(x)` with `self.head = nn.Sequential(..., nn.Sigmoid())`, or
      `net(x)` whose class's `forward` returns such a head or a `torch.sigmoid(...)`);
    - raw logits, only where that is certain: the output of an `nn.Linear` (or an `nn.Sequential`
      ending with one) called directly, or of a model of the file whose `forward` returns
      only such a layer's output.

    Reshapes that keep the values are followed (`netD(x).view(-1)`, `.squeeze(1)`, `.float()`).
    A sigmoid feeding `BCEWithLogitsLoss` is {rule:softmax-before-cross-entropy}'s. Model outputs
    whose last operation is not visible (another file, a library model, a variable) are not flagged.

    ## Why is this bad?
    `BCELoss` takes probabilities and clamps its log terms at -100. After a separate `sigmoid`,
    a confident wrong prediction saturates: checked on torch 2.13, a logit of 20 with target 0
    gives `sigmoid` = 1.0 in float32, a loss clamped to 100 and a gradient of exactly 0, where
    `BCEWithLogitsLoss` (which fuses the two with the log-sum-exp trick) gives the gradient 1/N:
    the examples the model gets most wrong stop teaching it. Raw logits are worse: `BCELoss`
    raises `RuntimeError: all elements of input should be between 0 and 1` at the first value
    outside [0, 1] (checked on torch 2.13, CPU).

    ## Example
    ```python
    criterion = nn.BCELoss()
    loss = criterion(torch.sigmoid(model(x)), y)
    ```

    ## Use instead
    ```python
    criterion = nn.BCEWithLogitsLoss()
    loss = criterion(model(x), y)
    probs = torch.sigmoid(model_output)  # for metrics only
    ```

    ## Fix safety
    No automatic fix: the sigmoid often lives in the model, and the code that reads its
    probabilities (metrics, thresholds) must change with it.

    ## References
    - [torch.nn.BCEWithLogitsLoss](https://pytorch.org/docs/stable/generated/torch.nn.BCEWithLogitsLoss.html)
    - [torch.nn.BCELoss](https://pytorch.org/docs/stable/generated/torch.nn.BCELoss.html)
    """

    code = "TL404"
    default_enabled = False
    name = "sigmoid-into-bce"
    summary = "sigmoid followed by BCELoss (use BCEWithLogitsLoss), or raw logits fed to BCELoss"
    peer_checks = {"TG006": "covered: sigmoid outputs or raw logits into `BCELoss`"}  # rules_docs/peer-parity.md
    severity = "warning"
    tags = ("correctness", "numerics", "loss")
    requires_text = ("BCELoss", "binary_cross_entropy")
    evidence = Evidence(probe=probe_sigmoid_bce)

    def setup(self, ctx: FileContext) -> None:
        self.losses = LossCalls(frozenset({"torch.nn.BCELoss"}), frozenset({"torch.nn.functional.binary_cross_entropy"}))

    def visit_Assign(self, node: ast.Assign, ctx: FileContext) -> None:
        self.losses.record(node, ctx)

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        if not node.args and not any(k.arg == "input" for k in node.keywords):
            return
        loss = self.losses.match(node, ctx)
        if loss is None:
            return
        given = arg_or_keyword(node, 0, "input")
        if given is None:
            return
        value: Optional[ast.AST] = given
        index: Optional[int] = None
        if isinstance(given, ast.Name):
            binding = ctx.binding_before(given.id, node.lineno)
            plain = binding is not None and isinstance(binding.node, (ast.Assign, ast.AnnAssign, ast.NamedExpr))
            value, index = (binding.value, binding.index) if plain else (None, None)  # type: ignore[union-attr]
        if not isinstance(value, ast.Call) or index is not None:
            return
        kind = self._kind(value, ctx)
        short = "F.binary_cross_entropy" if loss.startswith("torch.nn.functional.") else "nn.BCELoss"
        if kind == "sigmoid":
            self.report(given, BceAfterSigmoid(loss=short),
                        params={"input": "sigmoid"})
        elif kind == "linear":
            self.report(given, BceOnLogits(loss=short),
                        params={"input": "logits"})

    def _kind(self, call: ast.Call, ctx: FileContext) -> Optional[str]:
        """'sigmoid' or 'linear': what produced the loss input (through reshapes that keep
        the values: `netD(x).view(-1)`)."""
        while isinstance(call.func, ast.Attribute) and call.func.attr in _RESHAPES \
                and isinstance(call.func.value, ast.Call):
            call = call.func.value
        if ctx.call_name(call) in _SIGMOIDS:
            return "sigmoid"
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr == "sigmoid" and not call.args and ctx.call_name(call) is None:
            return "sigmoid"  # `x.sigmoid()`
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            return _layer_kind(ctx.self_attribute_value(func.attr), ctx)
        if not isinstance(func, ast.Name):
            return None
        built = ctx.value_before(func, call.lineno, module_fallback=True)
        if not isinstance(built, ast.Call):
            return None
        layer = _layer_kind(built, ctx)
        if layer is not None:
            return layer
        cls = ctx.module_class(built.func.id) if isinstance(built.func, ast.Name) else None
        if cls is None or not ctx.is_module_class(cls):
            return None
        return _forward_kind(cls, ctx)


def _forward_kind(cls: ast.ClassDef, ctx: FileContext) -> Optional[str]:
    """What every `return` of the class's `forward` ends with, when they all agree."""
    forward = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "forward"), None)
    if forward is None:
        return None
    found: set[Optional[str]] = set()
    for ret in (n for n in ast.walk(forward) if isinstance(n, ast.Return)):
        value: Optional[ast.AST] = ret.value
        if isinstance(value, ast.Name):
            value = ctx.sole_value(value.id, forward)
        if not isinstance(value, ast.Call):
            return None
        func = value.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            found.add(_layer_kind(ctx.self_attribute_value(func.attr, cls), ctx))
        elif ctx.module_scope.imports.call_name(value) in _SIGMOIDS:
            found.add("sigmoid")
        else:
            return None
    return found.pop() if len(found) == 1 else None
