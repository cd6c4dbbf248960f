"""TL801: `torch.zeros(...).to(device)`: create on the device instead."""

from __future__ import annotations

import ast

from torchlint.analysis.torch_api import conversion_target
from torchlint.checker import FileContext
from torchlint.edits import UNSAFE, SAFE, add_keyword, edit, end_of, has_comment, make_fix, text_of
from torchlint.rules.base import Evidence, Rule, Violation, literal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional

_FACTORIES = frozenset(f"torch.{n}" for n in (
    "zeros", "ones", "empty", "full", "rand", "randn", "randint", "randperm", "arange", "linspace",
    "logspace", "eye", "tensor", "zeros_like", "ones_like", "empty_like", "full_like", "rand_like",
    "randn_like"))
# Same values either way, except these: the CPU and CUDA generators draw different numbers.
_RANDOM = frozenset(f"torch.{n}" for n in ("rand", "randn", "randint", "randperm", "rand_like", "randn_like"))


# -- evidence (runs only in the --verify worker: see CONTRIBUTING.md) ----------------------
def probe_create_then_move(params: dict, device: str) -> tuple[str, str]:
    import torch

    # The rule never flags a move to "cpu" (nothing is copied); `target` names the device the
    # code spells, when it does.
    target = params.get("target")
    if device == "cpu":  # absent hardware is no evidence either way
        return "skipped", (f"needs CUDA: the move to {target or 'the device'!r} costs a host-to-device copy only "
                           f"when the target is a GPU, and this run has none")
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        torch.zeros(1024, 1024).to(device)  # noqa: TL202, TL801 - the hazard, on purpose
        torch.cuda.synchronize()
    moved = sum(1 for e in prof.events() if "Memcpy HtoD" in e.name or e.name == "aten::copy_")
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        torch.zeros(1024, 1024, device=device)
        torch.cuda.synchronize()
    direct = sum(1 for e in prof.events() if "Memcpy HtoD" in e.name or e.name == "aten::copy_")
    if moved > direct:
        return "confirmed", f"create-then-move ran {moved} host-to-device copy events, creating on the device {direct}"
    return "not-reproduced", f"{moved} vs {direct} copy events"


class CreatedThenMoved(Violation):
    factory: str  # `torch.zeros`
    like: Optional[str] = None  # a `*_like` factory's input, as written
    by_type: bool = False  # moved by `.type(cuda type)`/`.type_as(x)`, which set the dtype too

    def message(self) -> str:
        if self.like is not None:
            return (f"`{self.factory}(...)` is allocated on the device of `{self.like}`, "
                    "then copied when that is not the target")
        return f"`{self.factory}(...)` is allocated on the CPU, then copied to the device"

    def help_text(self) -> str:
        return f"Pass `device=` and `dtype=` to `{self.factory}`" if self.by_type else \
            f"Pass `device=` to `{self.factory}`"


class CreateThenMove(Rule):
    """On the 2026-12 held-out corpus (54 projects, independent triage), 8 of 20 findings were true;
    off by default. Enable it with `--extend-select TL801`.

    ## What it does
    Flags a tensor factory immediately moved to a device: `torch.zeros(...).to(device)`,
    `torch.randn(...).cuda()`, `torch.tensor(data).to(x.device)`, and the same moves spelled
    `.type(torch.cuda.FloatTensor)` or `.type_as(x)`. A `.to(dtype)` or `.type(torch.float16)`
    alone is not flagged.

    For `*_like` factories (`zeros_like`, `randn_like`, ...) the tensor is allocated on the
    *input's* device, not the CPU; the message says so (a copy follows only when that device is
    not the target). It leaves out one-shot code, where a perf hint is noise: an
    `if __name__ == "__main__":` block, a function named `main` or like a warm-up or demo, and a
    loop over warm-up steps.

    ## Why is this bad?
    The tensor is first allocated and filled on the CPU, then copied to the device: two
    allocations and a host-to-device transfer (which synchronises) where passing `device=` to the
    factory allocates it once, on the device.

    `--verify` shows the extra host-to-device copy on CUDA. Without a GPU the probe gives no verdict (`skipped: needs CUDA`): the cost exists only on a GPU, so a CPU run is no evidence either way.

    ## Example
    ```python
    mask = torch.ones(n, n).to(device)
    ```

    ## Use instead
    ```python
    mask = torch.ones(n, n, device=device)
    ```

    ## Fix safety
    `device=` is passed to the factory and the move removed: `torch.zeros(n).cuda()` becomes
    `torch.zeros(n, device="cuda")`. Safe for deterministic factories (the same values on the same
    device). Unsafe for random factories (`rand`, `randn`, `randint`, `randperm`, `*_like`): the
    device's generator draws different numbers than the CPU's; and when `requires_grad` is
    passed, since the result becomes a leaf tensor. Moves with more than a device
    (`.to(device, dtype)`, `non_blocking=`) are not rewritten.

    ## References
    - [CUDA semantics: best practices](https://pytorch.org/docs/stable/notes/cuda.html#best-practices)
    """

    code = "TL801"
    name = "create-then-move"
    summary = "Tensor created on CPU then moved; create it on the device"
    peer_checks = {"TG013": "partly: TL801 reports tensors created on the CPU and then moved; hoisting an invariant transfer out of the loop is not reported"}  # rules_docs/peer-parity.md
    severity = "info"
    default_enabled = False
    tags = ("performance", "device")
    requires_text = ('.to(', '.cuda(', '.type(', '.type_as(')
    evidence = Evidence(probe=probe_create_then_move)

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        func = node.func
        if not isinstance(func, ast.Attribute) or func.attr not in ("to", "cuda", "type", "type_as"):
            return
        if func.attr in ("type", "type_as") and not _moves_by_type(node, ctx):
            return
        inner = func.value
        factory = ctx.call_name(inner)
        if factory not in _FACTORIES:
            return
        if any(k.arg == "device" for k in inner.keywords):  # type: ignore[attr-defined]
            return
        if func.attr == "to":
            targets = [conversion_target(a, ctx) for a in node.args[:1]] + [
                conversion_target(k.value, ctx, k.arg) for k in node.keywords if k.arg in ("device", "dtype")]
            if "device" not in targets:
                return  # a dtype change, or not known to be a move
        target = "cuda" if func.attr == "type" else None if func.attr == "type_as" else _literal_device(node)
        if target is not None and target.startswith("cpu"):
            return  # `.to("cpu")` on a CPU tensor returns the tensor itself: nothing is copied
        if _one_shot(ctx):
            return  # a warm-up or a `__main__` demo: runs once, a copy costs nothing that matters
        if factory.endswith("_like"):  # type: ignore[union-attr]
            source = ast.unparse(inner.args[0]) if inner.args else "the input"  # type: ignore[attr-defined]
            violation = CreatedThenMoved(factory=factory, like=source)
        else:
            violation = CreatedThenMoved(factory=factory, by_type=func.attr in ("type", "type_as"))
        fixable = isinstance(inner, ast.Call) and func.attr in ("to", "cuda")
        self.report(node, violation, fix=_fix(node, inner, factory, ctx) if fixable else None,  # type: ignore[arg-type]
                    params={"target": target})


def _moves_by_type(call: ast.Call, ctx: FileContext) -> bool:
    """`.type(torch.cuda.FloatTensor)` (a CUDA tensor type: a copy to the GPU, as `.cuda()`),
    or `.type_as(other)` (to `other`'s device, as `.to(other.device)`). A CPU tensor type is
    TL209's; `.type(torch.float16)` is a dtype change only."""
    if len(call.args) != 1 or call.keywords:
        return False
    if call.func.attr == "type_as":  # type: ignore[attr-defined]
        return True
    arg = call.args[0]
    name = ctx.qualname(arg) if not isinstance(arg, ast.Constant) else arg.value
    return isinstance(name, str) and name.startswith("torch.cuda.") and name.endswith("Tensor")


_ONE_SHOT_PARTS = ("warm", "demo", "example")


def _one_shot(ctx: FileContext) -> bool:
    """Code that runs once: an `if __name__ == "__main__":` block, a function named `main`
    or like a warm-up or demo, a loop over warm-up steps."""
    for fn in ctx.functions:
        name = getattr(fn, "name", "").lower()
        if name == "main" or any(part in name for part in _ONE_SHOT_PARTS):
            return True
    return ctx.any_ancestor("one-shot", _runs_once)  # each enclosing if/loop judged once per file


def _runs_once(parent: ast.AST) -> bool:
    if isinstance(parent, ast.If) and any(isinstance(n, ast.Name) and n.id == "__name__"
                                          for n in ast.walk(parent.test)):
        return True
    return isinstance(parent, (ast.For, ast.AsyncFor, ast.While)) and "warm" in ast.unparse(
        parent.iter if not isinstance(parent, ast.While) else parent.test).lower()


def _fix(move: ast.Call, factory_call: ast.Call, factory: str, ctx: FileContext):  # type: ignore[no-untyped-def]
    """`torch.zeros(n).cuda()` -> `torch.zeros(n, device="cuda")`, for a move with nothing
    but a device: one positional argument or `device=` (`.cuda()` alone means "cuda")."""
    method = move.func.attr  # type: ignore[attr-defined]
    if method == "cuda" and not move.args and not move.keywords:
        device = '"cuda"'
    elif len(move.args) + len(move.keywords) == 1 and (move.args or move.keywords[0].arg == "device"):
        device = text_of(ctx.source, move.args[0] if move.args else move.keywords[0].value)
    else:
        return None
    source = ctx.source
    suffix = edit(end_of(source, factory_call), end_of(source, move), "")
    if has_comment(text_of(source, move)[len(text_of(source, factory_call)):]):
        return None
    add = add_keyword(source, factory_call, f"device={device}")
    if add is None:
        return None
    # A random factory draws different numbers on the device; requires_grad=True turns a
    # non-leaf (the moved copy) into a leaf.
    unsafe = factory in _RANDOM or any("grad" in (k.arg or "") for k in factory_call.keywords)
    return make_fix(f"Pass `device={device}` to `{factory}`", [add, suffix], UNSAFE if unsafe else SAFE)


def _literal_device(call: ast.Call) -> Optional[str]:
    """The device a `.to(...)`/`.cuda()` moves to, when the code spells it: "cuda", "cpu", "cuda:1"."""
    if isinstance(call.func, ast.Attribute) and call.func.attr == "cuda":
        return "cuda"
    value = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "device"), None)
    if isinstance(value, ast.Call) and isinstance(value.func, (ast.Attribute, ast.Name)) and value.args \
            and (value.func.attr if isinstance(value.func, ast.Attribute) else value.func.id) == "device":
        value = value.args[0]
    device = literal(value) if value is not None else None
    return device if isinstance(device, str) and len(device) <= 20 else None
