"""Evaluation code: functions named for evaluation, where each same-file function is called
(and whether under a grad-disabled `with`), which receivers the file ever puts in eval mode,
and which model classes hold BatchNorm or Dropout layers. Built once per file, on the first
question, and kept in the model's memo."""

from __future__ import annotations

import ast
import re

from torchlint.analysis.astutil import dotted, literal
from torchlint.analysis.nodes import child_list, iter_children
from torchlint.analysis.scopes import FUNCTION_TYPES, grad_mode_of
from torchlint.analysis.semantic import SemanticModel
from torchlint.fast_dataclass import dataclass, field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional

_EVAL_NAME = re.compile(r"(^|_)(val|valid|validate|validation|eval|evaluate|evaluation|test|testing)(_|$)")
_EVAL_PREFIX = re.compile(r"^(val|valid|validate|validation|eval|evaluate|evaluation|test|testing)")
# Layers whose behaviour differs between train() and eval().
MODE_LAYERS = frozenset({
    "torch.nn.BatchNorm1d", "torch.nn.BatchNorm2d", "torch.nn.BatchNorm3d", "torch.nn.SyncBatchNorm",
    "torch.nn.LazyBatchNorm1d", "torch.nn.LazyBatchNorm2d", "torch.nn.LazyBatchNorm3d",
    "torch.nn.Dropout", "torch.nn.Dropout1d", "torch.nn.Dropout2d", "torch.nn.Dropout3d", "torch.nn.AlphaDropout",
})
# torchvision model factories whose networks hold BatchNorm or Dropout layers.
_TORCHVISION_PREFIXES = ("resnet", "resnext", "wide_resnet", "vgg", "densenet", "mobilenet", "efficientnet",
                         "inception_v3", "googlenet", "alexnet", "shufflenet", "mnasnet", "regnet", "squeezenet")


def is_eval_name(name: str) -> bool:
    """`validate`, `evaluate`, `run_eval`, `test_epoch`, `val_step`; not `evaluate_and_train`-like
    names that also mention training."""
    lower = name.lower()
    return ("train" not in lower) and bool(_EVAL_NAME.search(lower) or _EVAL_PREFIX.match(lower))


@dataclass
class CallSite:
    call: ast.Call
    scope: ast.AST  # the function (or module) the call is made in
    grad_off: bool  # inside a `with torch.no_grad()` (or a grad-disabled decorated function)


@dataclass
class EvaluationFacts:
    # call sites by the called name: `f` for `f(...)`, `.m` for `x.m(...)`
    calls: dict[str, list[CallSite]] = field(default_factory=dict)
    eval_receivers: set[str] = field(default_factory=set)  # text of everything `.eval()`-ed in the file
    scopes_calling_eval: set[int] = field(default_factory=set)  # id(scope) with an `.eval()` call
    scopes_calling_train: set[int] = field(default_factory=set)  # id(scope) with a `.train()` call


def _mode_call(node: ast.Call) -> Optional[str]:
    """'eval' for `x.eval()`, `x.train(False)`; 'train' for `x.train()` / `x.train(True)`."""
    func = node.func
    if not isinstance(func, ast.Attribute):
        return None
    if func.attr == "eval" and not node.args and not node.keywords:
        return "eval"
    if func.attr == "train":
        given = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "mode"), None)
        value = True if given is None else literal(given)
        return "eval" if value is False else "train" if value is True else "eval"  # unknown: assume eval
    return None


def evaluation_facts(model: SemanticModel) -> EvaluationFacts:
    key = ("evaluation-facts",)
    found = model.memo.get(key)
    if found is None:
        found = model.memo[key] = _collect(model)
    return found  # type: ignore[return-value]


def _collect(model: SemanticModel) -> EvaluationFacts:
    facts = EvaluationFacts()
    imports = model.module_scope.imports
    stack: list[tuple[ast.AST, ast.AST, bool]] = [(model.tree, model.tree, False)]
    while stack:
        node, scope, grad_off = stack.pop()
        if isinstance(node, FUNCTION_TYPES):
            scope = node
            grad_off = any((grad_mode_of(d, imports) or (False, ""))[0] for d in node.decorator_list)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            if any((grad_mode_of(i.context_expr, imports) or (False, ""))[0] for i in node.items):
                for stmt in node.body:
                    stack.append((stmt, scope, True))
                for item in node.items:
                    stack.append((item, scope, grad_off))
                continue
        elif isinstance(node, ast.expr):
            _collect_expression(node, scope, grad_off, facts)
            continue
        stack.extend((child, scope, grad_off) for child in iter_children(node))
    return facts


def _collect_expression(root: ast.expr, scope: ast.AST, grad_off: bool, facts: EvaluationFacts) -> None:
    """The calls of one expression, found in the order `_collect`'s stack would find them:
    its scope and grad mode are the same throughout (an expression holds no function or
    `with`), so a plain stack of nodes does, without a tuple per node (most of the tree)."""
    stack: list[ast.AST] = [root]
    pop, extend = stack.pop, stack.extend
    while stack:
        node = pop()
        if type(node) is ast.Call:
            _record_call(node, scope, grad_off, facts)  # type: ignore[arg-type]
        extend(child_list(node))


def _record_call(node: ast.Call, scope: ast.AST, grad_off: bool, facts: EvaluationFacts) -> None:
    if isinstance(node.func, ast.Name):
        facts.calls.setdefault(node.func.id, []).append(CallSite(node, scope, grad_off))
    elif isinstance(node.func, ast.Attribute):  # `self.validate()`: methods, by name
        facts.calls.setdefault("." + node.func.attr, []).append(CallSite(node, scope, grad_off))
    mode = _mode_call(node)
    if mode == "eval":
        facts.eval_receivers.add(dotted(node.func.value))  # type: ignore[attr-defined]
        facts.scopes_calling_eval.add(id(scope))
    elif mode == "train":
        facts.scopes_calling_train.add(id(scope))


def _class_has_mode_layers(cls: ast.ClassDef, model: SemanticModel, depth: int = 0) -> bool:
    key = ("mode-layers", id(cls))
    found = model.memo.get(key)
    if found is not None:
        return found  # type: ignore[return-value]
    model.memo[key] = False  # a class that builds itself
    result = False
    if _manages_its_mode(cls):
        return False
    for node in ast.walk(cls):
        if isinstance(node, ast.Call):
            name = model.module_scope.imports.call_name(node)
            if (name in MODE_LAYERS and not _batch_statistics_only(node)) \
                    or (name is not None and torchvision_with_mode_layers(name)):
                result = True
                break
            if depth < 2 and isinstance(node.func, ast.Name):
                other = model.module_class(node.func.id)
                if other is not None and other is not cls and model.is_module_class(other) \
                        and _class_has_mode_layers(other, model, depth + 1):
                    result = True
                    break
    model.memo[key] = result
    return result


def _manages_its_mode(cls: ast.ClassDef) -> bool:
    """A class that overrides `train()` or calls `.eval()` itself (frozen BatchNorm in detection
    code): its layers' mode is not what the caller's `.eval()` decides."""
    return any(isinstance(s, FUNCTION_TYPES) and s.name == "train" for s in cls.body) or any(
        isinstance(n, ast.Call) and _mode_call(n) == "eval" for n in ast.walk(cls))


def _batch_statistics_only(call: ast.Call) -> bool:
    """`nn.BatchNorm2d(c, track_running_stats=False)`: batch statistics in both modes."""
    return any(k.arg == "track_running_stats" and literal(k.value) is False for k in call.keywords)


def torchvision_with_mode_layers(name: str) -> bool:
    if not name.startswith("torchvision.models."):
        return False
    return name.rsplit(".", 1)[1].startswith(_TORCHVISION_PREFIXES)


def built_with_mode_layers(value: Optional[ast.AST], model: SemanticModel) -> Optional[str]:
    """The class (or factory) name when `value` builds a model known to hold BatchNorm or
    Dropout: `Net(...)` of this file, `torchvision.models.resnet18(...)`, either followed by
    `.to(...)` / `.cuda()`. None when unknown, or when the chain switches to eval itself."""
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
            and value.func.attr in ("to", "cuda", "cpu", "float", "half", "double", "train"):
        if value.func.attr == "train" and value.args and literal(value.args[0]) is not True:
            return None
        value = value.func.value
    if not isinstance(value, ast.Call):
        return None
    name = model.module_scope.imports.call_name(value)
    if name is not None:
        return name.rsplit(".", 1)[1] if torchvision_with_mode_layers(name) else None
    if isinstance(value.func, ast.Name):
        cls = model.module_class(value.func.id)
        if cls is not None and model.is_module_class(cls) and _class_has_mode_layers(cls, model):
            return cls.name
    return None


_MOVES = frozenset({"to", "cuda", "cpu", "float", "half", "double"})


def _moved(value: Optional[ast.AST], name: str) -> bool:
    """`name.to(device)`, `name.cuda().half()`: the same module, moved."""
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in _MOVES:
        value = value.func.value
    return isinstance(value, ast.Name) and value.id == name


def built_in_scope(name: str, scope: ast.AST, model: SemanticModel) -> Optional[str]:
    """The mode-layer model class that `name` holds in `scope` (a function or the module):
    every binding but the moves (`model = model.cuda()`) builds that same class."""
    found: set[Optional[str]] = set()
    for binding in model.scope_info(scope).assignments.get(name):  # type: ignore[arg-type]
        if binding.index is not None or not isinstance(binding.node, (ast.Assign, ast.AnnAssign)):
            return None
        if not _moved(binding.value, name):
            found.add(built_with_mode_layers(binding.value, model))
    return found.pop() if len(found) == 1 else None
