"""TL804: backward on a float16-autocast loss without a GradScaler."""

from __future__ import annotations

import ast

from torchlint.analysis.loops import is_backward, method_name
from torchlint.analysis.scopes import iter_scope
from torchlint.analysis.torch_api import dtype_name
from torchlint.checker import FileContext
from torchlint.rules.base import Evidence, Rule, Violation, arg_or_keyword, literal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional

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
    dtype = _dtype_choice(dtype_node, ctx) if dtype_node is not None else None
    enabled = arg_or_keyword(expr, 0 if cuda_amp else 2, "enabled")
    if enabled is not None and literal(enabled) is not True:
        return None
    if cuda_amp:
        if dtype_node is None or dtype == "torch.float16":
            return "torch.cuda.amp.autocast()"
        return None
    device = arg_or_keyword(expr, 0, "device_type")
    if dtype_node is not None:
        return f"{ast.unparse(expr)}" if dtype == "torch.float16" else None
    if literal(device) == "cuda":
        return f"{ast.unparse(expr)} (float16 by default on CUDA)"
    if isinstance(device, (ast.Name, ast.Attribute)) and _may_be_cuda(device, ctx):
        return f"{ast.unparse(expr)} (float16 by default when `{ast.unparse(device)}` is CUDA)"
    return None


def _dtype_choice(node: ast.AST, ctx: FileContext, depth: int = 0) -> Optional[str]:
    """The dtype `node` names; `torch.float16` when it may be float16: a name bound to
    `torch.float16 if fp16 else torch.bfloat16` or picked from a table that holds float16
    (`{"fp16": torch.float16, ...}[args.precision]`, also through a module-level table)."""
    found = dtype_name(node, ctx)
    if found is not None or depth > 3:
        return found
    if isinstance(node, ast.Name):
        value = ctx.value_before(node, node.lineno, module_fallback=True)
        return _dtype_choice(value, ctx, depth + 1) if value is not None else None
    if isinstance(node, ast.IfExp):
        options = [node.body, node.orelse]
    elif isinstance(node, ast.Subscript):
        options = [node.value]
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
        options = [node.func.value]  # DTYPES.get(name, default)
    elif isinstance(node, ast.Dict):
        options = [v for v in node.values if v is not None]
    else:
        return None
    if any(_dtype_choice(o, ctx, depth + 1) == "torch.float16" for o in options):
        return "torch.float16"
    return None


def _may_be_cuda(device: ast.AST, ctx: FileContext) -> bool:
    """`device_type=device`: CUDA unless the name is bound to a literal other than "cuda"."""
    if isinstance(device, ast.Name):
        value = ctx.value_before(device, device.lineno, module_fallback=True)
        if isinstance(value, ast.Constant):
            return isinstance(value.value, str) and value.value.startswith("cuda")
    return True


def _branches(scope: ast.AST) -> dict[int, tuple[tuple[int, int], ...]]:
    """id(node) -> the `if` branches it is in, as (id(if), 0 for body / 1 for else)."""
    paths: dict[int, tuple[tuple[int, int], ...]] = {}
    body = scope.body if isinstance(scope.body, list) else []  # type: ignore[attr-defined]
    stack: list[tuple[ast.AST, tuple[tuple[int, int], ...]]] = [(n, ()) for n in body]
    while stack:
        node, path = stack.pop()
        paths[id(node)] = path
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.If):
            stack.append((node.test, path))
            stack.extend((n, path + ((id(node), 0),)) for n in node.body)
            stack.extend((n, path + ((id(node), 1),)) for n in node.orelse)
            continue
        stack.extend((child, path) for child in ast.iter_child_nodes(node))
    return paths


def exclusive(a: tuple[tuple[int, int], ...], b: tuple[tuple[int, int], ...]) -> bool:
    """Are two branch paths on opposite sides of one `if` (never both run)?"""
    sides = dict(a)
    return any(sides.get(node, side) != side for node, side in b)


class Float16BackwardWithoutScaler(Violation):
    help = "Use `torch.amp.GradScaler` (`scaler.scale(loss).backward()`), or bfloat16"

    def message(self) -> str:
        return "float16 autocast backward without a `GradScaler`: small gradients underflow"


class Float16AutocastWithoutGradScaler(Rule):
    """On the 2026-12 held-out corpus (54 projects, independent triage), 2 of 3 findings were true;
    off by default. Enable it with `--extend-select TL804`.

    ## What it does
    Flags `.backward()` on a loss computed under float16 autocast
    (`torch.autocast(..., dtype=torch.float16)`, `torch.autocast("cuda")` whose default is float16,
    `torch.cuda.amp.autocast()`) when the function creates no `GradScaler` and calls no
    `.scale(...)`. bfloat16 and CPU autocast are not flagged.

    It follows the branch the backward is in: a backward in the `else:` of the `if` whose other
    branch enters float16 autocast never sees a float16 loss. The dtype may be picked from a
    table that holds float16 (`{"fp16": torch.float16, ...}[args.precision]`, a module-level
    `DTYPES` table, `.get(...)`, or `torch.float16 if fp16 else ...`), and `device_type=device`
    counts as CUDA unless `device` is bound to a literal other than `"cuda"`.

    ## Why is this bad?
    float16 cannot represent magnitudes below about 6e-8: small gradients underflow to zero in
    the backward pass and those parameters stop learning, with no error. `GradScaler` multiplies
    the loss before backward and unscales before the step to keep gradients representable.

    `--verify` reports this rule as `skipped`: whether gradients underflow depends on their sizes during training, which the code does not state: float16 flushes magnitudes below 2**-24 (about 6e-8) to zero, but no run short of the training itself shows that this model's gradients get that small.

    ## Example
    ```python
    with torch.autocast("cuda", dtype=torch.float16):
        loss = model(x, y)
    loss.backward()
    optimizer.step()
    ```

    ## Use instead
    ```python
    scaler = torch.amp.GradScaler("cuda")
    with torch.autocast("cuda", dtype=torch.float16):
        loss = model(x, y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [Automatic mixed precision: gradient scaling](https://pytorch.org/docs/stable/amp.html#gradient-scaling)
    """

    code = "TL804"
    name = "float16-autocast-without-grad-scaler"
    summary = "float16 autocast backward without GradScaler: small gradients underflow"
    severity = "warning"
    default_enabled = False
    tags = ("correctness", "mixed-precision")
    requires_text = ('autocast',)
    evidence = Evidence(reason=('whether gradients underflow depends on their sizes during training, which the code '
                                'does not state: float16 flushes magnitudes below 2**-24 (about 6e-8) to zero, but no run short '
                                "of the training itself shows that this model's gradients get that small"))

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
        paths: Optional[dict[int, tuple[tuple[int, int], ...]]] = None
        for call in calls:
            if not is_backward(call, ctx) or not isinstance(call.func, ast.Attribute) or call.lineno < node.lineno:
                continue
            if paths is None:
                paths = _branches(ctx.scope)
            if exclusive(paths.get(id(node), ()), paths.get(id(call), ())):
                continue  # `if fp16: with autocast(...) ... else: loss.backward()`
            receiver = call.func.value
            if call.lineno <= end or (isinstance(receiver, ast.Name) and receiver.id in computed):
                self.report(call, Float16BackwardWithoutScaler())
                return

    visit_AsyncWith = visit_With  # type: ignore[assignment]
