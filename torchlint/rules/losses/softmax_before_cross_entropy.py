"""TL401: softmax/sigmoid applied before a loss that applies it itself."""

from __future__ import annotations

import ast

from torchlint.analysis.losses import LossCalls
from torchlint.checker import FileContext
from torchlint.records import RuntimeResult
from torchlint.rules.base import Evidence, Rule, Violation, arg_or_keyword
import torchlint.runtime.judging as run

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Optional
    from pathlib import Path


# loss (class or function) -> activations that must not precede it. log_softmax before
# cross_entropy is redundant but harmless: log_softmax is idempotent, so loss and gradients
# are unchanged (checked on torch 2.13: equal loss, gradients within 4e-9).
_FORBIDDEN = {
    "torch.nn.CrossEntropyLoss": ("softmax",),
    "torch.nn.functional.cross_entropy": ("softmax",),
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


_ACTIVATION_MODULES = {"torch.nn.Softmax": "softmax", "torch.nn.LogSoftmax": "log_softmax",
                       "torch.nn.Sigmoid": "sigmoid"}


if TYPE_CHECKING:
    CallName = Callable[[ast.AST], Optional[str]]
# Calls that return the module they are called on (`model = model.to(device)`).
_SAME_MODULE = frozenset({"to", "cuda", "cpu", "float", "half", "double", "bfloat16", "train", "eval"})


def _layer_activation(layer: Optional[ast.AST], call_name: CallName) -> Optional[str]:
    """The activation a layer ends with: `nn.Softmax()`, or `nn.Sequential(..., nn.Softmax())`
    (names resolved by `call_name`, in the file that builds the layer)."""
    name = call_name(layer) if layer is not None else None
    if name in _ACTIVATION_MODULES:
        return _ACTIVATION_MODULES[name]  # type: ignore[index]
    if name == "torch.nn.Sequential" and layer.args and not isinstance(layer.args[-1], ast.Starred):  # type: ignore[union-attr]
        return _layer_activation(layer.args[-1], call_name)  # type: ignore[union-attr]
    return None


def _built_from(func: ast.Name, lineno: int, ctx: FileContext) -> Optional[ast.AST]:
    """What the module called as `func(x)` was built from, through re-bindings that return
    the same module (`model = model.to(device)`, `model = Net().train()`)."""
    built = ctx.value_before(func, lineno, module_fallback=True)
    for _ in range(8):
        if not (isinstance(built, ast.Call) and isinstance(built.func, ast.Attribute)
                and built.func.attr in _SAME_MODULE):
            break
        receiver = built.func.value
        if isinstance(receiver, ast.Call):
            built = receiver
        elif isinstance(receiver, ast.Name) and receiver.id == func.id:
            built = ctx.value_before(receiver, built.lineno - 1, module_fallback=True)
        else:
            return None
    return built


def module_output_activation(call: ast.Call, index: Optional[int], ctx: FileContext) -> Optional[str]:
    """The activation that ends the output of calling a module of the project, followed one
    level: `self.head(x)` with `self.head = nn.Sequential(..., nn.Softmax())`, or `net(x)`
    with `net = Net()` (Net of this file, or of another one it imports) whose `forward`
    returns such a head's output (`index` picks one element when the caller unpacks a
    returned tuple)."""
    func = call.func
    own = ctx.module_scope.imports.call_name
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
        return _layer_activation(ctx.self_attribute_value(func.attr), own) if index is None else None
    if not isinstance(func, ast.Name):
        return None
    built = _built_from(func, call.lineno, ctx)
    if not isinstance(built, ast.Call):
        return None
    if index is None and _layer_activation(built, own) is not None:
        return _layer_activation(built, own)
    found_class = _module_class(built.func, ctx)
    if found_class is None:
        return None
    cls, call_name = found_class
    forward = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "forward"), None)
    if forward is None:
        return None
    found = set()
    for ret in (n for n in ast.walk(forward) if isinstance(n, ast.Return) and n.value is not None):
        value = ret.value
        if isinstance(value, ast.Tuple):
            if index is None or index >= len(value.elts):
                return None
            value = value.elts[index]
        elif index is not None:
            return None
        if value is not None:
            found.add(_forward_value_activation(value, forward, cls, ctx, call_name))
    return found.pop() if len(found) == 1 else None


def _module_class(func: ast.AST, ctx: FileContext) -> Optional[tuple[ast.ClassDef, CallName]]:
    """The nn.Module class `func` names, of this file or another project file, and how names
    resolve where it is defined."""
    if isinstance(func, ast.Name) and ctx.module_class(func.id) is not None:
        cls = ctx.module_class(func.id)
        return (cls, ctx.module_scope.imports.call_name) if cls is not None and ctx.is_module_class(cls) else None
    qn = ctx.project_qualname(func)
    found = ctx.index.class_def(qn) if qn is not None and ctx.index is not None else None
    if found is None or not ctx.is_module_base(qn):  # type: ignore[arg-type]
        return None
    return found[1], found[0].call_name


def _forward_value_activation(value: ast.AST, forward: ast.FunctionDef, cls: ast.ClassDef,
                              ctx: FileContext, call_name: CallName) -> Optional[str]:
    if isinstance(value, ast.Name):  # `label = self.aux(out)` ... `return validity, label`
        assigned = ctx.sole_value(value.id, forward)
        if assigned is None:
            return None
        value = assigned
    if not isinstance(value, ast.Call):
        return None
    func = value.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
        return _layer_activation(ctx.self_attribute_value(func.attr, cls), call_name)
    name = call_name(value)
    if name is None and isinstance(func, ast.Attribute) and func.attr in ("softmax", "sigmoid"):
        return func.attr  # `return logits.softmax(dim=-1)`
    return _ACTIVATION_FUNCS.get(name) if name is not None else None


def run_verdict(obs: run.Observation, path: str, rows: tuple[int, int], cwd: Path) -> RuntimeResult:
    """What the run shows: the loss input's producing node, followed through views to the softmax's own line."""
    losses = [e for e in obs.by_kind["loss"] if e["fn"] in ("cross_entropy", "binary_cross_entropy_with_logits")]
    # The loss at this line, or (following the tensor) a loss whose input came from the softmax here.
    calls = [e for e in losses if run.at(e["site"], path, rows) or run.at(e.get("module_site"), path, rows)
             or run.at(e.get("producer_site"), path, rows)]
    if not calls:
        return run.not_reached("no cross_entropy / BCE-with-logits call ran at this line or on its softmax output")
    for e in calls:
        producer = e.get("input_producer") or ("softmax" if e.get("input_rows_sum_to_one") else None)
        if producer:
            again = "log_softmax" if e["fn"] == "cross_entropy" else "a sigmoid"
            how = "its autograd node" if e.get("input_producer") else "its rows sum to 1"
            return run.verdict("confirmed", f"at step {e['step']}, the input {run.shape(e.get('input'))} of {e['fn']} "
                                            f"was a {producer} output ({how}), and {e['fn']} applies {again} again",
                               len(calls))
    return run.verdict("not-observed", f"ran {len(calls)} time(s); the loss input was never a softmax/sigmoid output",
                       len(calls))


class SoftmaxInputMonitor:
    """Whether a loss's input is a softmax/sigmoid output: its autograd node, followed through
    views and reshapes (`input_producer`), and where that softmax ran (`producer_site`, so a
    loss on another line still confirms the flagged softmax); else, for class-index losses, rows
    that are all >= 0 and sum to 1 (`input_rows_sum_to_one`)."""

    SITES = 256  # recent softmax outputs remembered
    # Autograd nodes a softmax output passes through unchanged in value on its way to the loss.
    VIEW_NODES = ("ViewBackward0", "UnsafeViewBackward0", "ReshapeAliasBackward0", "TransposeBackward0",
                  "PermuteBackward0", "TBackward0", "SliceBackward0", "SelectBackward0", "ExpandBackward0",
                  "SqueezeBackward0", "SqueezeBackward1", "UnsqueezeBackward0", "CloneBackward0",
                  "ToCopyBackward0", "AliasBackward0")
    PROBABILITY_NODES = {"SoftmaxBackward0": "softmax", "SigmoidBackward0": "sigmoid"}

    def __init__(self) -> None:
        self.sites: dict[int, tuple] = {}  # id(SoftmaxBackward0 node) -> (node type, site)

    def softmax_output(self, m: Any, name: str, result: Any) -> None:
        if name != "softmax" or getattr(result, "grad_fn", None) is None:
            return
        if len(self.sites) >= self.SITES:
            self.sites.pop(next(iter(self.sites)))
        self.sites[id(result.grad_fn)] = (type(result.grad_fn).__name__, m.user.site(3))

    @classmethod
    def producer(cls, node: Any) -> tuple[Optional[str], Any]:
        """The probability activation behind a loss input, through views and reshapes (`.view`)."""
        for _ in range(8):
            if node is None:
                return None, None
            name = type(node).__name__
            if name in cls.PROBABILITY_NODES:
                return cls.PROBABILITY_NODES[name], node
            if name not in cls.VIEW_NODES:
                return None, None
            node = next((fn for fn, _ in node.next_functions if fn is not None), None)
        return None, None

    def loss(self, m: Any, name: str, inp: Any, target: Any, event: dict, budget: bool) -> None:
        producer, node = self.producer(inp.grad_fn)
        if producer:
            event["input_producer"] = producer
            known = self.sites.get(id(node))
            if known is not None and known[0] == type(node).__name__:
                event["producer_site"] = known[1]
        elif (name in ("cross_entropy", "nll_loss") and inp.dtype.is_floating_point and inp.dim() >= 2 and budget
              and inp.numel()):
            detached = inp.detach()
            # Logits almost always hold a negative value: that one sync answers, before the sums.
            if float(detached.min()) >= 0 and bool(((detached.sum(dim=1) - 1).abs() < 1e-4).all()):
                event["input_rows_sum_to_one"] = True


# -- evidence (runs only in the --verify worker: see CONTRIBUTING.md) ----------------------
def probe_softmax_before_ce(params: dict, device: str) -> tuple[str, str]:
    import torch
    import torch.nn.functional as F

    act = params.get("activation", "softmax")
    loss_name = str(params.get("loss", "F.cross_entropy"))
    if "nll" in loss_name.lower():
        z = torch.tensor([[8.0, 0.0, 0.0]], device=device)
        y = torch.tensor([0], device=device)
        applied = {"softmax": torch.softmax, "sigmoid": lambda t, dim: torch.sigmoid(t)}.get(act, torch.log_softmax)
        wrong = F.nll_loss(applied(z, dim=1), y)
        right = F.nll_loss(torch.log_softmax(z, dim=1), y)
        if abs(wrong.item() - right.item()) > 1e-3:
            return ("confirmed", f"for a confident correct prediction {loss_name} gives {wrong.item():.4f} on {act} "
                                 f"output, {right.item():.4f} on log_softmax output")
        return "not-reproduced", f"{loss_name} gives {wrong.item():.4f} either way"
    if act == "sigmoid":
        z = torch.tensor([6.0, -6.0], device=device, requires_grad=True)
        y = torch.tensor([1.0, 0.0], device=device)
        right = F.binary_cross_entropy_with_logits(z, y)
        wrong = F.binary_cross_entropy_with_logits(torch.sigmoid(z), y)  # noqa: TL401 - the hazard, on purpose
    else:
        z = torch.tensor([[8.0, 0.0, 0.0]], device=device, requires_grad=True)
        y = torch.tensor([0], device=device)
        right = F.cross_entropy(z, y)
        wrong = F.cross_entropy(torch.softmax(z, dim=1), y) if act == "softmax" else F.cross_entropy(  # noqa: TL401 - the hazard, on purpose
            torch.log_softmax(z, dim=1), y)
    if act == "log_softmax":
        return "not-reproduced", f"log_softmax twice is idempotent: loss {wrong.item():.4f} == {right.item():.4f}"
    if abs(wrong.item() - right.item()) > 1e-3:
        return ("confirmed", f"for a confident correct prediction the loss is {wrong.item():.4f} with {act} "
                             f"first, {right.item():.4f} on the logits")
    return "not-reproduced", "losses agree"


def judge_softmax_before_ce(facts: dict, runs: list) -> Optional[tuple[str, str]]:
    import torch
    import torch.nn.functional as F
    from _evidence import first_line, flag

    rec = flag(runs)
    acts = runs[0]["obs"].get("act")
    if rec is None or not acts:
        return None
    if rec.get("exc") is not None:
        return "error", f"the loss call raised {first_line(rec['exc'])}"
    act = acts[0]
    z = act["args"][0] if act["args"] else None
    name = getattr(act["func"], "__name__", "")
    dim = act["kwargs"].get("dim", act["args"][1] if len(act["args"]) > 1 else None)
    fn, args, kwargs = rec["func"], list(rec["args"]), dict(rec["kwargs"])
    loss_name = str(facts.get("loss", ""))
    if not isinstance(z, torch.Tensor):
        return None
    right_input = z
    if "nll" in loss_name.lower() or "NLL" in loss_name:
        right_input = F.log_softmax(z, dim=dim if dim is not None else -1)
    if args:
        args[0] = right_input
    else:
        kwargs["input"] = right_input
    with torch.no_grad():
        right = fn(*args, **kwargs)
    wrong = rec["value"]
    if not (isinstance(wrong, torch.Tensor) and isinstance(right, torch.Tensor) and wrong.numel() == right.numel()):
        return None
    diff = float((wrong.detach().float() - right.detach().float()).abs().max())
    wrong_s, right_s = _short(wrong), _short(right)
    base = "the logits" if "nll" not in loss_name.lower() else "log_softmax of the logits"
    if diff > 1e-4 * max(1.0, float(right.detach().abs().max())):
        return "confirmed", f"the loss is {wrong_s} with {name or 'the activation'} first, {right_s} on {base}"
    return "not-reproduced", f"the loss is {wrong_s} either way ({right_s} on {base})"


def _short(t: Any) -> str:
    return f"{float(t):.4f}" if t.numel() == 1 else str([round(float(v), 4) for v in t.flatten()[:3]])


class SoftmaxBeforeLoss(Violation):
    """This module is the example of the shape (see CONTRIBUTING.md): the fields are what the
    message needs, `message()` and `help_text()` say it, and the report passes the probe's
    facts apart (`params=`)."""

    loss: str  # as written in the message: `F.cross_entropy`, `nn.NLLLoss`
    activation: str  # `softmax`, `log_softmax`, `sigmoid`

    def _nll(self) -> bool:
        return "nll" in self.loss.lower()

    def message(self) -> str:
        what = _WHAT["softmax-nll"] if self._nll() else _WHAT[self.activation]
        return f"`{self.loss}` gets {what}"

    def help_text(self) -> str:
        return "Use `log_softmax`" if self.activation == "softmax" and self._nll() else "Pass the raw logits"


class SoftmaxBeforeCrossEntropy(Rule):
    """## What it does
    Flags the input of `nn.CrossEntropyLoss` / `F.cross_entropy` when it is a `softmax` result
    (directly, or through a local variable assigned from it);
    `nn.BCEWithLogitsLoss` / `F.binary_cross_entropy_with_logits` on a `sigmoid` result; and
    `nn.NLLLoss` / `F.nll_loss` on a `softmax` (not `log_softmax`) result. Using the softmax for
    metrics while the loss gets the logits is not flagged, and neither is a `log_softmax` result
    fed to `CrossEntropyLoss`: redundant, but `log_softmax` is idempotent, so the loss and its
    gradients are the same.

    The output of a module of the project counts too, one level deep: `self.head(x)` with
    `self.head = nn.Sequential(..., nn.Softmax())`, or `out = net(x)` (also unpacked from a tuple)
    where `net = Net()` and `Net.forward` returns such a head's output. `Net` may be defined in
    another file of the project (`from models import Net`), and `net` may be re-bound to itself
    on the way (`net = net.to(device)`, `net = net.train()`), also across notebook cells.

    ## Why is this bad?
    `CrossEntropyLoss` applies `log_softmax` itself and `BCEWithLogitsLoss` applies `sigmoid`
    itself. Applying it first computes a different loss: softmax outputs lie in (0, 1), so the
    second softmax sees nearly flat logits, the loss can never approach 0, and the gradients
    shrink; training is slow or stalls, with no error. `NLLLoss` expects log-probabilities,
    not probabilities.

    ## Example
    ```python
    probs = F.softmax(model(x), dim=-1)
    loss = F.cross_entropy(probs, y)
    ```

    ## Use instead
    ```python
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    probs = logits.softmax(dim=-1)  # for metrics only
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [torch.nn.CrossEntropyLoss](https://pytorch.org/docs/stable/generated/torch.nn.CrossEntropyLoss.html)
    - [torch.nn.BCEWithLogitsLoss](https://pytorch.org/docs/stable/generated/torch.nn.BCEWithLogitsLoss.html)
    """

    code = "TL401"
    name = "softmax-before-cross-entropy"
    summary = "softmax/sigmoid applied before a loss that already applies it"
    peer_checks = {"TG005": "covered", "TG006": "covered: sigmoid before `BCEWithLogitsLoss`"}  # rules_docs/peer-parity.md
    severity = "error"
    tags = ("correctness", "loss")
    # The loss is called in the file; the activation may be in another one (a model's head).
    requires_text = ('CrossEntropyLoss', 'cross_entropy', 'BCEWithLogitsLoss', 'binary_cross_entropy_with_logits',
                     'NLLLoss', 'nll_loss')
    evidence = Evidence(probe=probe_softmax_before_ce, slice="input-of-consumer", judge=judge_softmax_before_ce,
                        runtime=run_verdict, monitor=SoftmaxInputMonitor)

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
        arg = given = arg_or_keyword(node, 0, "input")
        index = None
        if isinstance(arg, ast.Name):
            binding = ctx.binding_before(arg.id, node.lineno)
            plain = binding is not None and isinstance(binding.node, (ast.Assign, ast.AnnAssign, ast.NamedExpr))
            arg, index = (binding.value, binding.index) if plain else (None, None)  # type: ignore[union-attr]
        if arg is None:
            return
        act = _activation(arg, ctx) if index is None else None
        if act is None and isinstance(arg, ast.Call):
            act = module_output_activation(arg, index, ctx)
            arg = given  # point at what the loss is given: the activation is in another method
        if act is not None:
            self._check(loss, (arg, act))  # type: ignore[arg-type]

    def _check(self, loss: str, found: tuple[ast.Call, str]) -> None:
        arg, act = found
        if act not in _FORBIDDEN[loss]:
            return
        short = loss.replace("torch.nn.functional.", "F.").replace("torch.nn.", "nn.")
        self.report(arg, SoftmaxBeforeLoss(loss=short, activation=act), params={"loss": short, "activation": act})
