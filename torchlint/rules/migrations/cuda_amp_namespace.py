"""TL906: `torch.cuda.amp.autocast` / `GradScaler` (and `torch.cpu.amp.autocast`), deprecated
in favour of `torch.amp.*` with a device argument."""

from __future__ import annotations

import ast

from torchlint.analysis.torch_versions import at_least
from torchlint.checker import FileContext
from torchlint.edits import Fix, edit, end_of, make_fix, module_alias, replace, start_of
from torchlint.rules.base import Evidence, Rule, TORCH_VERSION_OPTION, Violation, calls_ending

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional

# old name -> (new name, device, how the device is passed)
_MOVED = {
    "torch.cuda.amp.autocast": ("torch.amp.autocast", "cuda", "first"),
    "torch.cuda.amp.GradScaler": ("torch.amp.GradScaler", "cuda", "first"),
    "torch.cpu.amp.autocast": ("torch.amp.autocast", "cpu", "first"),
    "torch.cuda.amp.custom_fwd": ("torch.amp.custom_fwd", "cuda", "device_type"),
    "torch.cuda.amp.custom_bwd": ("torch.amp.custom_bwd", "cuda", "device_type"),
}
_LAST = frozenset(n.rsplit(".", 1)[1] for n in _MOVED)


class CudaAmpName(Violation):
    name: str  # `torch.cuda.amp.autocast`
    use: str  # the replacement as called, `torch.amp.autocast("cuda", ...)`

    def message(self) -> str:
        return f"`{self.name}` is deprecated since torch 2.4 (2.13 warns FutureWarning)"

    def help_text(self) -> str:
        return f"Use `{self.use}`"


class CudaAmpNamespace(Rule):
    """## What it does
    Flags `torch.cuda.amp.autocast`, `torch.cuda.amp.GradScaler`, `torch.cpu.amp.autocast` and
    `torch.cuda.amp.custom_fwd`/`custom_bwd`, however imported. Not reported when
    `torch-version` is below 2.4 (the release that deprecated them; `torch.amp.GradScaler`
    itself only exists since 2.3).

    It stays silent inside the `except (AttributeError, TypeError, ImportError):` fallback of a
    version check (`try: torch.amp.GradScaler("cuda") except AttributeError: torch.cuda.amp.GradScaler()`):
    there the old name is what an older torch needs, and replacing it would break the fallback.

    ## Why is this bad?
    Since torch 2.4 these names are deprecated in favour of the device-generic `torch.amp`
    API. On torch 2.13 each call warns FutureWarning, for example that
    `torch.cuda.amp.autocast(args...)` is deprecated and `torch.amp.autocast('cuda', args...)`
    is the replacement.

    ## Example
    ```python
    scaler = torch.cuda.amp.GradScaler()
    with torch.cuda.amp.autocast(dtype=torch.bfloat16):
        loss = model(x)
    ```

    ## Use instead
    ```python
    scaler = torch.amp.GradScaler("cuda")
    with torch.amp.autocast("cuda", dtype=torch.bfloat16):
        loss = model(x)
    ```

    ## Fix safety
    Safe, for calls spelled through the module with keyword arguments only: the name becomes
    `torch.amp.*` and the device goes first, which is what the old classes do internally.
    Positional arguments are not rewritten (they would shift: the second positional argument of
    `torch.amp.autocast` is `dtype`, not `enabled`), nor are bare imported names or
    `custom_fwd`/`custom_bwd` (which take `device_type=`). One difference remains: the old
    `torch.cuda.amp.autocast()` passes `dtype=torch.float16` explicitly, while
    `torch.amp.autocast("cuda")` uses the autocast dtype set with `torch.set_autocast_dtype`,
    which is float16 unless the program changed it.

    ## References
    - [Automatic mixed precision](https://pytorch.org/docs/stable/amp.html)
    """

    code = "TL906"
    name = "cuda-amp-namespace"
    summary = "`torch.cuda.amp.*` / `torch.cpu.amp.autocast` are deprecated; use `torch.amp.*` with a device"
    severity = "warning"
    tags = ("migration", "deprecation", "mixed-precision")
    precision = "very-high"
    requires_text = ("amp",)
    options = {"torch-version": TORCH_VERSION_OPTION}
    evidence = Evidence(reason=("checked once on torch 2.13: each name warns FutureWarning naming its torch.amp "
                                "replacement (tests/test_migrations.py repeats it when torch is installed)"))

    def _check(self, node: ast.AST, call: Optional[ast.Call], ctx: FileContext) -> None:
        name = ctx.qualname(node)
        if name not in _MOVED or not at_least(self.settings["torch-version"], "2.4"):
            return  # torch.amp.GradScaler appeared in 2.3 and the old names warn from 2.4
        if _in_compat_fallback(ctx):
            return  # the old name is the fallback for a torch without torch.amp: it must stay
        new, device, how = _MOVED[name]
        spelled = f'{new}("{device}", ...)' if how == "first" else f'{new}(device_type="{device}")'
        self.report(node, CudaAmpName(name=name, use=spelled), fix=_fix(node, call, new, device, how, ctx))

    # Calls, and bare decorators (`@torch.cuda.amp.custom_fwd`): a handler on every Name and
    # Attribute node would cost more than the rule is worth.
    @calls_ending(_LAST)
    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        if _candidate(node.func, ctx):
            self._check(node.func, node, ctx)

    def _decorators(self, node: ast.AST, ctx: FileContext) -> None:
        for deco in node.decorator_list:  # type: ignore[attr-defined]
            if not isinstance(deco, ast.Call) and _candidate(deco, ctx):
                self._check(deco, None, ctx)

    visit_FunctionDef = _decorators
    visit_AsyncFunctionDef = _decorators


_COMPAT_ERRORS = frozenset({"AttributeError", "TypeError", "ImportError", "ModuleNotFoundError"})


def _in_compat_fallback(ctx: FileContext) -> bool:
    """Inside `except (AttributeError, TypeError, ImportError):` -- the branch that runs
    only where the new `torch.amp` spelling failed (an older torch)."""
    for parent in ctx.parents:
        if isinstance(parent, ast.ExceptHandler) and parent.type is not None:
            names = parent.type.elts if isinstance(parent.type, ast.Tuple) else [parent.type]
            if any(isinstance(n, ast.Name) and n.id in _COMPAT_ERRORS for n in names):
                return True
    return False


def _candidate(func: ast.AST, ctx: FileContext) -> bool:
    if isinstance(func, ast.Attribute):
        return func.attr in _LAST
    return isinstance(func, ast.Name) and ctx.qualname(func) in _MOVED


def _fix(node: ast.AST, call: Optional[ast.Call], new: str, device: str, how: str, ctx: FileContext) -> Optional[Fix]:
    """`torch.cuda.amp.autocast(...)` -> `torch.amp.autocast("cuda", ...)`, for a call spelled
    through the module with keyword arguments only (positional ones shift: the first
    positional of torch.amp.autocast is the device, the second `dtype`, not `enabled`)."""
    if not isinstance(node, ast.Attribute) or call is None or call.args or how != "first":
        return None
    alias = module_alias(ctx.imports.aliases, "torch.amp")
    if alias is None:
        return None
    last = new.rsplit(".", 1)[1]
    end = end_of(ctx.source, call)
    inside = f'"{device}", ' if call.keywords else f'"{device}"'
    open_paren = start_of(ctx.source, call.keywords[0]) if call.keywords else (end[0], end[1] - 1)
    return make_fix(f'Use `{new}("{device}", ...)`',
                    [replace(ctx.source, node, f"{alias}.{last}"), edit(open_paren, open_paren, inside)])
