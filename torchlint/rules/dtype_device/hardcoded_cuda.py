"""TL207 (off by default): hard-coded CUDA device outside an availability guard."""

from __future__ import annotations

import ast

from torchlint.checker import FileContext
from torchlint.rules.base import Evidence, Rule, Violation

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional


def _is_cuda_literal(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and \
        (node.value == "cuda" or node.value.startswith("cuda:"))


def _is_guard(node: ast.AST) -> bool:
    if isinstance(node, (ast.If, ast.IfExp, ast.While, ast.Assert)):
        for n in ast.walk(node.test):
            name = n.attr if isinstance(n, ast.Attribute) else n.id if isinstance(n, ast.Name) else ""
            name = name.lower()
            if name in ("is_available", "device_count") or "cuda" in name or "gpu" in name:
                return True
    return False


class HardcodedCudaDevice(Violation):
    help = "Pick the device once (`'cuda' if torch.cuda.is_available() else 'cpu'`)"

    def message(self) -> str:
        return "Hard-coded CUDA device fails on machines without a GPU"


class HardcodedCuda(Rule):
    """## What it does
    Flags `.cuda()` and `"cuda"`/`"cuda:N"` device literals (in `.to(...)`, `device=`,
    `torch.device(...)`) outside a guard: an `if`/conditional expression whose test calls
    `torch.cuda.is_available()`/`device_count()` or names a CUDA/GPU switch (`args.cuda`, `use_gpu`).
    Off by default: many projects only ever run on GPUs.

    ## Why is this bad?
    Hard-coded CUDA makes code fail on CPU-only machines, CI runners and Apple silicon
    (`AssertionError: Torch not compiled with CUDA enabled` or `RuntimeError: No CUDA GPUs are
    available`). Choosing one `device` object up front keeps the code portable.

    `--verify` reports this rule as `skipped`: portability depends on the machine the code will run on, not on this one.

    ## Example
    ```python
    model = model.cuda()
    x = torch.zeros(3, device="cuda")
    ```

    ## Use instead
    ```python
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = model.to(device)
    x = torch.zeros(3, device=device)
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [CUDA semantics: device-agnostic code](https://pytorch.org/docs/stable/notes/cuda.html#device-agnostic-code)
    """

    code = "TL207"
    name = "hardcoded-cuda"
    summary = "Hard-coded .cuda()/'cuda' outside a torch.cuda.is_available() guard"
    severity = "info"
    default_enabled = False
    tags = ("portability", "device")
    requires_text = ('cuda',)
    evidence = Evidence(reason='portability depends on the machine the code will run on, not on this one',
                        crash=r"Torch not compiled with CUDA enabled|No CUDA GPUs are available|Found no NVIDIA driver")
    precision = "medium"

    def _guarded(self, ctx: FileContext) -> bool:
        """Inside `if torch.cuda.is_available():`, `if args.cuda:`, `if use_gpu:` and the like."""
        return ctx.any_ancestor("cuda-guard", _is_guard)

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        func = node.func
        hit: Optional[ast.AST] = None
        if isinstance(func, ast.Attribute) and func.attr == "cuda" and not node.args \
                and ctx.qualname(func) is None:
            hit = node
        else:
            positional = node.args[:1] if isinstance(func, ast.Attribute) and func.attr == "to" else []
            for arg in [*positional, *(k.value for k in node.keywords if k.arg == "device")]:
                if _is_cuda_literal(arg):
                    hit = arg
            if ctx.call_name(node) == "torch.device" and node.args and _is_cuda_literal(node.args[0]):
                hit = node
        if hit is not None and not self._guarded(ctx):
            self.report(hit, HardcodedCudaDevice())
