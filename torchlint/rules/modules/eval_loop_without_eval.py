"""TL705: an evaluation loop that forwards a BatchNorm/Dropout model never put in eval mode."""

from __future__ import annotations

import ast
import os

from torchlint.analysis.evaluation import built_in_scope, built_with_mode_layers, evaluation_facts, is_eval_name
from torchlint.analysis.training_step import trains
from torchlint.checker import FileContext
from torchlint.rules.base import Evidence, Rule, Violation, dotted

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional


def probe_eval_mode(params: dict, device: str) -> tuple[str, str]:
    """Forward validation batches under `no_grad` through a model left in training mode.
    Facts: `layer` ("BatchNorm" or "Dropout"), `eval_called` (the model is put in eval first)."""
    import torch

    torch.manual_seed(0)
    layer = params.get("layer", "BatchNorm")
    norm = torch.nn.BatchNorm1d(4)
    mode_layer = norm if layer == "BatchNorm" else torch.nn.Dropout(0.5)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), mode_layer).to(device)
    if params.get("eval_called"):
        model.eval()
    batch = torch.randn(16, 4, device=device) * 3 + 2
    with torch.no_grad():
        if layer == "BatchNorm":
            before = torch.as_tensor(norm.running_mean).clone()
            model(batch)
            moved = (torch.as_tensor(norm.running_mean) - before).abs().max().item()
            if moved > 0:
                return "confirmed", f"under no_grad, one validation batch moved BatchNorm's running_mean by {moved:.3g}"
            return "not-reproduced", "the running statistics did not change"
        first, second = model(batch), model(batch)
    if not torch.equal(first, second):
        return "confirmed", "two forwards of the same batch under no_grad differ: Dropout is active"
    return "not-reproduced", "the forwards agree: Dropout is off"


class ModelNotInEvalMode(Violation):
    model: str  # as called, `model` / `self.net`
    built: str  # the class it was built from

    def message(self) -> str:
        shown = f"`{self.model}` ({self.built})" if len(self.model) + len(self.built) <= 40 else f"`{self.built}`"
        return f"{shown} has BatchNorm/Dropout and is never put in `.eval()` for this evaluation"

    def help_text(self) -> str:
        return f"Call `{self.model}.eval()` before the loop (and `.train()` after it)"


class EvalLoopWithoutEval(Rule):
    """## What it does
    Flags the forward call of a model in an evaluation loop when the model is known to hold
    BatchNorm or Dropout layers and the file never puts it in eval mode. An evaluation loop is a
    loop under `torch.no_grad()` / `torch.inference_mode()` (a `with` or a decorator), or a loop
    in a function named for evaluation (`validate`, `evaluate`, `val_epoch`, `test`...; not in
    test files, where `test_*` are pytest tests) that does not train; the loop itself must not train (no `backward()` or optimizer step, itself or in a
    same-file helper) nor iterate a name containing `train`. A validation pass under `no_grad`
    inside a training function counts.

    The model is known when it is built in the file: a class of the file whose layers include
    `nn.BatchNorm*` (not with `track_running_stats=False`), `nn.SyncBatchNorm` or `nn.Dropout*`
    (also through another class of the file, two levels deep) and that neither overrides
    `train()` nor calls `.eval()` itself (frozen BatchNorm), or a torchvision factory (`resnet50`, `vgg16`, `densenet121`,
    `mobilenet_v3_large`...). A model passed in as a parameter is known through the calls of
    the function in the file. It stays silent when the file calls `.eval()` (or `.train(False)`)
    on that model anywhere, when the function (or one that calls it) calls `.eval()` on
    anything, or `.train()` without training (an explicit mode, such as recalibrating BatchNorm
    statistics on purpose), and when the model's class is not visible.

    ## Why is this bad?
    `torch.no_grad()` turns off gradient tracking, not training behaviour. In training mode
    BatchNorm normalises with the batch's own statistics and updates its running statistics
    with every forward; Dropout zeroes activations at random. Checked on torch 2.13: under
    `no_grad`, one validation batch moves a training-mode BatchNorm's `running_mean`, and two
    forwards of the same batch through a training-mode Dropout differ. The validation metrics
    are noisy and batch-size dependent, and the validation data leaks into the running
    statistics that the saved model uses at inference.

    ## Example
    ```python
    import torchvision

    def validate(model, loader):
        correct = 0
        with torch.no_grad():
            for x, y in loader:
                correct += (model(x).argmax(1) == y).sum().item()
        return correct

    validate(torchvision.models.resnet50(), val_loader)
    ```

    ## Use instead
    ```python
    import torchvision

    def validate(model, loader):
        correct = 0
        model.eval()
        with torch.no_grad():
            for x, y in loader:
                correct += (model(x).argmax(1) == y).sum().item()
        model.train()
        return correct

    validate(torchvision.models.resnet50(), val_loader)
    ```

    ## Fix safety
    No automatic fix: where to switch back to `train()` is the caller's choice.

    ## References
    - [torch.nn.Module.eval](https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.eval)
    - [Autograd mechanics: locally disabling gradient computation](https://pytorch.org/docs/stable/notes/autograd.html#locally-disabling-gradient-computation)
    """

    code = "TL705"
    name = "eval-loop-without-eval"
    summary = "Evaluation loop forwards a BatchNorm/Dropout model that is never put in eval mode"
    severity = "warning"
    tags = ("correctness", "evaluation")
    requires_text = ("BatchNorm", "Dropout", "torchvision")
    evidence = Evidence(probe=probe_eval_mode)

    def setup(self, ctx: FileContext) -> None:
        self._reported: set[tuple[int, str]] = set()
        self._train_iterables: dict[int, bool] = {}  # id(loop) -> does it iterate something named *train*
        # In a test file, `test_*` names pytest tests, which may run training-mode forwards on purpose.
        name = os.path.basename(ctx.source.path)
        self._test_file = name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        if not ctx.loops or not node.args or not isinstance(node.func, (ast.Name, ast.Attribute)):
            return
        if isinstance(node.func, ast.Attribute) and not (isinstance(node.func.value, ast.Name)
                                                          and node.func.value.id == "self"):
            return
        if not self._evaluating(ctx):
            return
        text = dotted(node.func)
        key = (id(ctx.scope), text)
        if key in self._reported:
            return
        facts = evaluation_facts(ctx)
        if _sets_mode(ctx.scope, ctx) or _mentioned(text, facts.eval_receivers):
            return
        built = self._model_class(node, ctx)
        if built is None:
            return
        self._reported.add(key)
        self.report(node, ModelNotInEvalMode(model=text, built=built),
                    params={"layer": "BatchNorm", "eval_called": False})

    def _evaluating(self, ctx: FileContext) -> bool:
        loop = ctx.loops[-1]
        named = self._train_iterables.get(id(loop))
        if named is None:  # asked for every call in the loop: unparse its iterable once
            iterated = getattr(loop, "iter", None)
            named = self._train_iterables[id(loop)] = iterated is not None and "train" in dotted(iterated).lower()
        if named:
            return False
        fn = ctx.function
        # A validation pass inside a training function is the usual shape: under no_grad, the
        # innermost loop (not the function) must not train. Both syntactic facts come before
        # `trains`, which follows calls: most loops are neither.
        grad_off = ctx.grad_disabled()
        eval_named = fn is not None and not self._test_file and is_eval_name(getattr(fn, "name", ""))
        if not (grad_off or eval_named) or trains(loop, ctx):
            return False
        return grad_off or (fn is not None and not trains(fn, ctx))

    def _model_class(self, node: ast.Call, ctx: FileContext) -> Optional[str]:
        func = node.func
        if isinstance(func, ast.Attribute):
            return built_with_mode_layers(ctx.self_attribute_value(func.attr), ctx)
        assert isinstance(func, ast.Name)
        binding = ctx.binding_before(func.id, node.lineno, module_fallback=True)
        if binding is None:
            return None
        if isinstance(binding.node, ast.arg):
            return self._through_callers(func.id, ctx)
        for _ in range(3):  # `model = model.cuda()`: the binding before that one builds it
            if binding is None or binding.index is not None or not isinstance(binding.node, (ast.Assign, ast.AnnAssign)):
                return None
            value = binding.value
            while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
                    and value.func.attr in ("to", "cuda", "cpu", "float", "half", "double"):
                value = value.func.value
            if not (isinstance(value, ast.Name) and value.id == func.id):
                return built_with_mode_layers(binding.value, ctx)
            binding = ctx.binding_before(func.id, binding.lineno - 1, module_fallback=True)
        return None

    def _through_callers(self, param: str, ctx: FileContext) -> Optional[str]:
        """The model class the file's calls of this function pass as `param`."""
        fn = ctx.function
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or fn not in ctx.tree.body:
            return None
        names = [a.arg for a in fn.args.posonlyargs + fn.args.args]
        facts = evaluation_facts(ctx)
        found = None
        for site in facts.calls.get(fn.name, []):
            if _sets_mode(site.scope, ctx):
                return None  # the caller sets a mode itself
            given = next((k.value for k in site.call.keywords if k.arg == param), None)
            if given is None and param in names and names.index(param) < len(site.call.args):
                given = site.call.args[names.index(param)]
            if isinstance(given, ast.Call):  # `fit(Net(), ...)`
                found = found or built_with_mode_layers(given, ctx)
                continue
            if not isinstance(given, ast.Name) or _mentioned(given.id, facts.eval_receivers):
                continue
            scope = site.scope if ctx.is_local(given.id, site.scope) else ctx.tree  # type: ignore[arg-type]
            found = found or built_in_scope(given.id, scope, ctx)
        return found


def _sets_mode(scope: ast.AST, ctx: FileContext) -> bool:
    """Does this function call `.eval()` on anything, or `.train()` without training (a
    deliberate mode, such as recalibrating BatchNorm)? The module's own code is judged by
    receivers only: a notebook's `model.train()` does not put the model in eval."""
    if scope is ctx.tree:
        return False
    facts = evaluation_facts(ctx)
    return id(scope) in facts.scopes_calling_eval or (id(scope) in facts.scopes_calling_train
                                                      and not trains(scope, ctx))


def _mentioned(text: str, receivers: set[str]) -> bool:
    """Was `text` (or a part or a wrapper of it: `model.module`) ever put in eval mode?"""
    return any(r == text or r.startswith(text + ".") or text.startswith(r + ".") for r in receivers)
