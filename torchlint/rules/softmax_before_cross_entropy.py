"""TL401: softmax/sigmoid applied before a loss that applies it itself."""

from __future__ import annotations

import ast
from typing import Optional

from torchlint.analysis.losses import LossCalls
from torchlint.checker import FileContext
from torchlint.rules.base import Rule, arg_or_keyword, dotted

# loss (class or function) -> activations that must not precede it
_FORBIDDEN = {
    "torch.nn.CrossEntropyLoss": ("softmax", "log_softmax"),
    "torch.nn.functional.cross_entropy": ("softmax", "log_softmax"),
    "torch.nn.BCEWithLogitsLoss": ("sigmoid",),
    "torch.nn.functional.binary_cross_entropy_with_logits": ("sigmoid",),
    "torch.nn.NLLLoss": ("softmax",),
    "torch.nn.functional.nll_loss": ("softmax",),
}
_WHAT = {
    "softmax": "softmax outputs but applies log_softmax itself",
    "log_softmax": "log_softmax outputs but applies log_softmax itself",
    "sigmoid": "sigmoid outputs but applies sigmoid itself",
    "softmax-nll": "softmax probabilities, not log-probabilities",
}
_WHY = {
    "softmax": "CrossEntropyLoss applies log_softmax itself: softmax first squashes the logits, the loss "
               "is wrong and gradients shrink",
    "log_softmax": "CrossEntropyLoss applies log_softmax itself; doing it twice is harmless numerically but "
                   "signals NLLLoss was meant",
    "sigmoid": "BCEWithLogitsLoss applies sigmoid itself: sigmoid twice squashes outputs into "
               "(0.5, 0.73) and gradients vanish",
    "softmax-nll": "NLLLoss expects log-probabilities: with softmax probabilities the loss is wrong",
}
_ACTIVATION_FUNCS = {
    "torch.softmax": "softmax", "torch.nn.functional.softmax": "softmax",
    "torch.log_softmax": "log_softmax", "torch.nn.functional.log_softmax": "log_softmax",
    "torch.sigmoid": "sigmoid", "torch.nn.functional.sigmoid": "sigmoid",
}


def _activation(node: ast.AST, ctx: FileContext) -> Optional[str]:
    if not isinstance(node, ast.Call):
        return None
    name = ctx.call_name(node)
    if name in _ACTIVATION_FUNCS:
        return _ACTIVATION_FUNCS[name]
    if name is None and isinstance(node.func, ast.Attribute) and node.func.attr in ("softmax", "log_softmax", "sigmoid"):
        return node.func.attr
    return None


class SoftmaxBeforeCrossEntropy(Rule):
    code = "TL401"
    name = "softmax-before-cross-entropy"
    summary = "softmax/sigmoid applied before a loss that already applies it"
    severity = "error"
    tags = ("correctness", "loss")
    requires_text = ('softmax', 'sigmoid')

    def setup(self, ctx: FileContext) -> None:
        self.losses = LossCalls(frozenset(k for k in _FORBIDDEN if not k.startswith("torch.nn.functional.")),
                                frozenset(k for k in _FORBIDDEN if k.startswith("torch.nn.functional.")))

    def visit_Assign(self, node: ast.Assign, ctx: FileContext) -> None:
        self.losses.record(node, ctx)

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        if not node.args and not any(k.arg == "input" for k in node.keywords):
            return
        loss = self.losses.match(node, ctx)
        if loss is None:
            return
        arg = arg_or_keyword(node, 0, "input")
        if isinstance(arg, ast.Name):
            arg = ctx.value_before(arg, node.lineno)
        act = _activation(arg, ctx) if arg is not None else None
        if act is not None:
            self._check(loss, (arg, act))  # type: ignore[arg-type]

    def _check(self, loss: str, found: tuple[ast.Call, str]) -> None:
        arg, act = found
        if act not in _FORBIDDEN[loss]:
            return
        short = loss.replace("torch.nn.functional.", "F.").replace("torch.nn.", "nn.")
        fix = "Pass the raw logits" if act != "softmax" or "nll" not in loss.lower() else "Use `log_softmax`"
        self.report(arg, f"`{short}` gets {_WHAT[act] if 'nll' not in loss.lower() else _WHAT['softmax-nll']}",
                    help=fix, params={"loss": short, "activation": act})
