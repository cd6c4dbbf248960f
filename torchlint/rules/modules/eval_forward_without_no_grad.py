"""TL706: an evaluation loop that forwards the model with gradient tracking on."""

from __future__ import annotations

import ast
import os
import re

from torchlint.analysis import inference
from torchlint.analysis.evaluation import evaluation_facts, is_eval_name
from torchlint.analysis.scopes import grad_mode_of
from torchlint.analysis.training_step import trains
from torchlint.checker import FileContext
from torchlint.rules.base import Evidence, Rule, Violation, dotted

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional


def probe_eval_no_grad(params: dict, device: str) -> tuple[str, str]:
    """Count the bytes autograd saves for backward during one evaluation forward of a small
    MLP; with facts `no_grad`, the forward runs under `torch.no_grad()`."""
    import contextlib

    import torch

    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)).to(device)
    saved = [0]

    def pack(t: torch.Tensor) -> torch.Tensor:
        saved[0] += t.numel() * t.element_size()
        return t

    guard = torch.no_grad() if params.get("no_grad") else contextlib.nullcontext()
    with guard, torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = model(torch.randn(64, 256, device=device))
    if saved[0]:
        return "confirmed", (f"one forward of a batch of 64 saved {saved[0]} bytes for a backward that never runs "
                             f"(output requires_grad={out.requires_grad})")
    return "not-reproduced", "the forward saved nothing for backward"


_EVAL_DATA = re.compile(r"(val|valid|test|eval|dev)")
_SMOKE_FILE = re.compile(r"(^test_.*|.*_test|conftest)\.pyw?$")


def _loader_like(node: ast.AST, ctx: FileContext) -> Optional[str]:
    """The text of a loader (or dataset) the loop walks: `val_loader`, `enumerate(test_dl)`,
    `dataloaders["val"]`, `tqdm(loader)`."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("enumerate", "tqdm") \
            and node.args:
        node = node.args[0]
    text = dotted(node)
    lower = text.lower()
    if ctx.call_name(node) == "torch.utils.data.DataLoader" or any(w in lower for w in ("loader", "_dl", "dataset")) \
            or lower.endswith("dl") or isinstance(node, ast.Subscript):
        return text
    return None


class EvalForwardRecordsGraph(Violation):
    help = "Wrap the evaluation loop in `with torch.no_grad():` (or `torch.inference_mode()`)"

    def message(self) -> str:
        return "Evaluation forward without `torch.no_grad()`: autograd keeps activations for a backward that never runs"


class EvalForwardWithoutNoGrad(Rule):
    """On the 2026-12 held-out corpus (54 projects, independent triage), 5 of 6 findings were true (the false one: pre-0.4 code whose `volatile=True` disabled gradients); off by
    default. Enable it with `--extend-select TL706`.

    ## What it does
    Flags the model forward of an evaluation loop that runs with gradient tracking on. The loop
    is an evaluation loop when it walks a loader (or dataset) named for evaluation data
    (`val_loader`, `test_dl`, `dataloaders["val"]`), or any loader inside a function named for
    evaluation (`validate`, `evaluate`, `test_epoch`...), forwards a model (a module of the file,
    or a name with `model`/`net` in it), accumulates a metric (`+=`, `.item()`, `.append(...)`,
    `.update(...)`), and never trains (no `backward()` or optimizer step, itself or through a
    same-file helper, in the loop or the function).

    It stays silent under `torch.no_grad()` / `torch.inference_mode()` / `set_grad_enabled(False)`
    (a `with`, or a decorator of the function), on any decorated function (the decorator may be
    one of those), on a function the file calls from a grad-disabled block, and on smoke tests:
    test files (`test_*.py`, `*_test.py`, `conftest.py`), functions named `test_*`, and loops that
    `assert`. Files that freeze parameters (`requires_grad_(False)`, `requires_grad = False`) are
    left out: a frozen model builds no graph.

    Off by default: it costs memory, not correctness, and a peer tool's version of this check
    was mostly shape smoke tests (16 of 19 findings). Its precision on real code has not been
    measured yet; select `TL706` to use it.

    ## Why is this bad?
    With gradients on, every forward records the autograd graph and keeps the activations each
    operation saves for backward, until the output is dropped: evaluation pays training's
    activation memory for a backward that never runs, and batches that would fit under
    `no_grad` run out of memory. Checked on torch 2.13: one forward of a 256-512-10 MLP on a
    batch of 64 saves about 340 KB of tensors for backward, and nothing under `no_grad`.

    ## Example
    ```python
    model.eval()
    for x, y in val_loader:
        correct += (model(x).argmax(1) == y).sum().item()
    ```

    ## Use instead
    ```python
    model.eval()
    with torch.no_grad():
        for x, y in val_loader:
            correct += (model(x).argmax(1) == y).sum().item()
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [torch.no_grad](https://pytorch.org/docs/stable/generated/torch.no_grad.html)
    - [torch.inference_mode](https://pytorch.org/docs/stable/generated/torch.inference_mode.html)
    """

    code = "TL706"
    name = "eval-forward-without-no-grad"
    summary = "Evaluation loop forwards the model with gradient tracking on (activations kept for no backward)"
    peer_checks = {"TG002": "covered, without the shape smoke tests that made most of torch-preflight's findings"}  # rules_docs/peer-parity.md
    severity = "info"
    tags = ("performance", "memory", "evaluation")
    requires_text = ("loader", "_dl", "dataset", "DataLoader")
    default_enabled = False
    evidence = Evidence(probe=probe_eval_no_grad)

    def setup(self, ctx: FileContext) -> None:
        self._smoke_file = bool(_SMOKE_FILE.match(os.path.basename(ctx.source.path)))
        text = ctx.source.text
        self._freezes = "requires_grad_(False)" in text or "requires_grad = False" in text

    def _check(self, loop: ast.For, ctx: FileContext) -> None:
        if self._smoke_file or self._freezes or ctx.grad_disabled():
            return
        loader = _loader_like(loop.iter, ctx)
        fn = ctx.function
        name = getattr(fn, "name", "")
        if loader is None or name.startswith("test_"):
            return
        if not (_EVAL_DATA.search(loader.lower()) or is_eval_name(name)) or "train" in loader.lower():
            return
        if fn is not None and (fn.decorator_list or self._called_without_grad(name, ctx)):  # type: ignore[attr-defined]
            return
        if trains(loop, ctx) or (fn is not None and trains(fn, ctx)):
            return
        forward = self._scan(loop, ctx)
        if forward is not None:
            self.report(forward, EvalForwardRecordsGraph(),
                        params={"no_grad": False})

    visit_For = _check
    visit_AsyncFor = _check

    def _called_without_grad(self, name: str, ctx: FileContext) -> bool:
        facts = evaluation_facts(ctx)
        return any(site.grad_off for site in facts.calls.get(name, []) + facts.calls.get("." + name, []))

    def _scan(self, loop: ast.For, ctx: FileContext) -> Optional[ast.Call]:
        """The loop's first model forward, when the loop also accumulates a metric and
        neither asserts nor turns gradients off inside."""
        forward, metric = None, False
        for node in ast.walk(loop):
            if isinstance(node, ast.Assert):
                return None
            if isinstance(node, (ast.With, ast.AsyncWith)) and any(
                    grad_mode_of(i.context_expr, ctx.imports) is not None or _grad_switch(i.context_expr, ctx)
                    for i in node.items):
                return None  # the loop sets the grad mode itself
            if isinstance(node, ast.AugAssign):
                metric = True
            elif isinstance(node, ast.Call):
                func = node.func
                if isinstance(func, ast.Attribute) and func.attr in ("item", "append", "update", "extend"):
                    metric = True
                elif forward is None and node.args and _is_model(func, ctx):
                    forward = node
        return forward if metric else None


def _grad_switch(expr: ast.AST, ctx: FileContext) -> bool:
    """`torch.set_grad_enabled(phase == "train")`: a mode decided at run time."""
    return ctx.call_name(expr) in ("torch.set_grad_enabled", "torch.inference_mode", "torch.no_grad")


def _is_model(func: ast.AST, ctx: FileContext) -> bool:
    if not isinstance(func, (ast.Name, ast.Attribute)):
        return False
    if isinstance(func, ast.Attribute) and not (isinstance(func.value, ast.Name) and func.value.id == "self"):
        return False
    last = (func.id if isinstance(func, ast.Name) else func.attr).lower()
    return "model" in last or last.endswith("net") or inference.kind_of(func, ctx) == inference.MODULE
