"""TL804: backward on a float16-autocast loss without a GradScaler."""

from __future__ import annotations

import ast
from typing import Optional

from torchlint.analysis.loops import is_backward, method_name
from torchlint.analysis.scopes import iter_scope
from torchlint.analysis.torch_api import dtype_name
from torchlint.checker import FileContext
from torchlint.rules.base import Rule, arg_or_keyword, literal

_SCALERS = ("torch.cuda.amp.GradScaler", "torch.amp.GradScaler", "torch.GradScaler")


def float16_autocast(expr: ast.AST, ctx: FileContext) -> Optional[str]:
    """A description when `expr` enters float16 autocast."""
    if not isinstance(expr, ast.Call):
        return None
    name = ctx.call_name(expr)
    if name not in ("torch.cuda.amp.autocast", "torch.autocast"):
        return None
    # torch.cuda.amp.autocast(enabled, dtype, ...); torch.autocast(device_type, dtype, enabled, ...)
    cuda_amp = name == "torch.cuda.amp.autocast"
    dtype_node = arg_or_keyword(expr, 1, "dtype")
    dtype = dtype_name(dtype_node, ctx) if dtype_node is not None else None
    enabled = arg_or_keyword(expr, 0 if cuda_amp else 2, "enabled")
    if enabled is not None and literal(enabled) is not True:
        return None
    if cuda_amp:
        if dtype_node is None or dtype == "torch.float16":
            return "torch.cuda.amp.autocast()"
        return None
    else:
        device = arg_or_keyword(expr, 0, "device_type")
        if dtype_node is not None:
            return f"{ast.unparse(expr)}" if dtype == "torch.float16" else None
        if literal(device) == "cuda":
            return f"{ast.unparse(expr)} (float16 by default on CUDA)"
    return None


class Float16AutocastWithoutGradScaler(Rule):
    code = "TL804"
    name = "float16-autocast-without-grad-scaler"
    summary = "float16 autocast backward without GradScaler: small gradients underflow"
    severity = "warning"
    tags = ("correctness", "mixed-precision")
    requires_text = ('autocast',)
    verify_note = ('whether gradients underflow depends on their sizes during training, which the code '
                   'does not state: float16 flushes magnitudes below 2**-24 (about 6e-8) to zero, but no run short '
                   "of the training itself shows that this model's gradients get that small")

    def visit_With(self, node: ast.With, ctx: FileContext) -> None:
        what = next((w for w in (float16_autocast(i.context_expr, ctx) for i in node.items) if w), None)
        if what is None:
            return
        calls = ctx.body_calls(ctx.scope)
        if any(ctx.call_name(c) in _SCALERS or method_name(c) == "scale" for c in calls):
            return
        computed = {t.id for s in iter_scope(node.body) if isinstance(s, ast.Assign)
                    for t in s.targets if isinstance(t, ast.Name)}
        end = node.end_lineno or node.lineno
        for call in calls:
            if not is_backward(call, ctx) or not isinstance(call.func, ast.Attribute) or call.lineno < node.lineno:
                continue
            receiver = call.func.value
            if call.lineno <= end or (isinstance(receiver, ast.Name) and receiver.id in computed):
                self.report(call, "float16 autocast backward without a `GradScaler`: small gradients underflow",
                            help="Use `torch.amp.GradScaler` (`scaler.scale(loss).backward()`), or bfloat16",
                            )
                return

    visit_AsyncWith = visit_With  # type: ignore[assignment]
