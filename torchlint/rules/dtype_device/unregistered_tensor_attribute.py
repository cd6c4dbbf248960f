"""TL206: `self.x = torch.zeros(...)` in an nn.Module's __init__."""

from __future__ import annotations

import ast

from torchlint.analysis.inference import TENSOR_FACTORIES, TENSOR_METHODS
from torchlint.analysis.torch_api import LEGACY_CONSTRUCTORS
from torchlint.checker import FileContext
from torchlint.rules.base import Evidence, MODULE_BASES_OPTION, Rule, Violation

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional


def _attribute_uses(cls: ast.ClassDef) -> dict[str, tuple[bool, int, int]]:
    """For each `self.<attr>` of the class: (assigned in a method other than __init__,
    reads, reads moved at the use `self.<attr>.to(...)` / `.cuda()`). One walk per class,
    not one per attribute (a class with thousands of attributes stays linear)."""
    uses: dict[str, list] = {}
    for method in cls.body:
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(method):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
                entry = uses.setdefault(node.attr, [False, 0, 0])
                if isinstance(node.ctx, ast.Store) and method.name != "__init__":
                    entry[0] = True
                elif isinstance(node.ctx, ast.Load):
                    entry[1] += 1
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("to", "cuda") \
                    and isinstance(node.func.value, ast.Attribute) and isinstance(node.func.value.value, ast.Name) \
                    and node.func.value.value.id == "self":
                uses.setdefault(node.func.value.attr, [False, 0, 0])[2] += 1
    return {attr: (entry[0], entry[1], entry[2]) for attr, entry in uses.items()}


# torch functions that return a tensor built from their (first) tensor argument: a mask or
# table computed from a factory (`torch.tril(torch.ones(8, 8))`) is as plain as the factory's.
_TRANSFORMS = frozenset({"tril", "triu", "diag", "diag_embed", "diagflat", "flip", "roll", "exp", "log", "sqrt",
                         "cumsum", "cumprod", "outer", "cat", "stack", "logical_not", "transpose", "reshape",
                         "unsqueeze", "cos", "sin", "pow", "abs", "sign", "clamp", "where"})
# Tensor methods on such a value; not `.to()`/`.cuda()`: the author placed it (left as before).
_METHODS = (TENSOR_METHODS | {"tril", "triu", "diag", "flip", "roll", "cumsum", "cumprod"}) - {"to", "cuda"}


def _built_from_factory(node: ast.AST, ctx: FileContext, depth: int = 0) -> bool:
    """`torch.tril(torch.ones(...))`, `torch.ones(8, 8).tril().bool()`, `torch.cat([torch.zeros(2), ...])`:
    a tensor op applied to a torch factory's result (a few levels deep)."""
    if depth > 8 or not isinstance(node, ast.Call):
        return False
    name = ctx.call_name(node)
    if name is not None and name.startswith("torch.") and name.count(".") == 1:
        last = name.rsplit(".", 1)[1]
        if last in TENSOR_FACTORIES:
            return name not in LEGACY_CONSTRUCTORS
        if last in _TRANSFORMS and node.args:
            first = node.args[0]
            items = first.elts if isinstance(first, (ast.List, ast.Tuple)) else [first]
            return any(_built_from_factory(item, ctx, depth + 1) for item in items)
        return False
    func = node.func
    return isinstance(func, ast.Attribute) and func.attr in _METHODS and _built_from_factory(func.value, ctx, depth + 1)


def _handled_elsewhere(uses: dict[str, tuple[bool, int, int]], attr: str) -> bool:
    """The class moves it itself at every use (`self.bins.to(x.device)`), another method
    replaces it before use (a setter), or no method reads it (a demo of what
    `named_parameters()` lists): either way nothing mixes devices or misses a saved value."""
    stored_elsewhere, reads, moved = uses.get(attr, (False, 0, 0))
    return stored_elsewhere or moved == reads


# -- evidence (runs only in the --verify worker: see CONTRIBUTING.md) ----------------------
def probe_unregistered_tensor(params: dict, device: str) -> tuple[str, str]:
    import torch
    import torch.nn as nn

    class M(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(2, 2)
            self.mask = torch.ones(2)

    m = M()
    target = torch.device(device) if device != "cpu" else torch.float64
    m.to(target)
    moved = m.fc.weight.device if device != "cpu" else m.fc.weight.dtype
    stayed = m.mask.device if device != "cpu" else m.mask.dtype
    missing = "mask" not in m.state_dict()
    if moved != stayed or missing:
        return ("confirmed", f"after .to({target}) the parameters are {moved} but the attribute is {stayed}; "
                             f"'mask' in state_dict(): {not missing}")
    return "not-reproduced", "the attribute followed the module"


def judge_unregistered_tensor(facts: dict, runs: list) -> Optional[tuple[str, str]]:
    import torch
    import torch.nn as nn
    from _evidence import failed, flag

    rec = flag(runs)
    if rec is None or failed(rec, "constructing the module"):
        return failed(rec, "constructing the module")
    module, attr = rec.get("value"), str(facts.get("attribute", ""))
    if not attr:
        return None
    value = getattr(module, attr, None)
    if not isinstance(module, nn.Module) or not isinstance(value, torch.Tensor):
        return "not-reproduced", f"after construction self.{attr} is a {type(value).__name__}, not a plain tensor"
    saved = attr in module.state_dict()
    before = value.dtype
    module.to(torch.float64)
    after = getattr(module, attr).dtype
    params = {p.dtype for p in module.parameters()}
    if not saved:
        moved = f"; after .to(torch.float64) the parameters are {sorted(map(str, params))} and self.{attr} is " \
                f"{after}" if params and value.is_floating_point() else ""
        return "confirmed", f"'{attr}' is not in state_dict(), so it is neither saved nor moved with the module{moved}"
    return "not-reproduced", f"self.{attr} is registered ('{attr}' in state_dict(); {before} -> {after})"


def observe_unregistered_tensor(build, facts: dict) -> tuple[str, str]:
    """The --verify observer on the user's own module (its file imported from the project,
    verify/project.py): build it, then look for the attribute in `state_dict()` and after
    `.to("meta")`. Copied for the worker like a probe: torch only, imported here."""
    import torch

    name, built = facts.get("attribute") or "", facts.get("built") or "the module"
    model = build()
    value = getattr(model, name, None) if name else None
    if not isinstance(value, torch.Tensor):
        return "not-reproduced", f"after `{built}`, `self.{name}` is a {type(value).__qualname__}, not a tensor"
    saved = name in model.state_dict()
    model.to("meta")
    after = getattr(model, name, None)
    where = after.device if isinstance(after, torch.Tensor) else type(after).__qualname__
    if not saved and isinstance(after, torch.Tensor) and after.device.type != "meta":
        return "confirmed", (f"`{name}` is not in `{built}`.state_dict(), and after .to('meta') it is still on "
                             f"{where}")
    return "not-reproduced", f"`{name}` in state_dict(): {saved}; after .to('meta') it is on {where}"


class PlainTensorAttribute(Violation):
    attribute: str

    def message(self) -> str:
        return f"Plain tensor `self.{self.attribute}` is not moved by `.to()` nor saved"

    def help_text(self) -> str:
        return f"Use `self.register_buffer('{self.attribute}', ...)` or `nn.Parameter(...)`"


class UnregisteredTensorAttribute(Rule):
    """On the 2026-12 held-out corpus (54 projects, independent triage), 2 of 4 findings were true;
    off by default. Enable it with `--extend-select TL206`.

    ## What it does
    Flags `self.x = torch.<factory>(...)` (`zeros`, `ones`, `arange`, `tensor`, `randn`, ...) in an
    `nn.Module` subclass's `__init__` that is neither wrapped in `nn.Parameter` nor registered
    with `register_buffer`; also a tensor computed from one, such as a mask
    (`torch.tril(torch.ones(n, n))`, `torch.ones(n, n).triu(1)`, `torch.cat([torch.zeros(2), ...])`).

    Not flagged: `torch.tensor(x)` of something that may be a scalar (a 0-dim CPU tensor combines
    with tensors on any device); an attribute the class moves itself at every use
    (`self.bins.to(x.device)`); an attribute another method replaces before use (a setter); an
    attribute no method of the class reads (nothing mixes devices, nothing is lost on reload).

    Subclasses of framework modules count as Modules: `pytorch_lightning`/`lightning`
    `LightningModule`, Hugging Face `PreTrainedModel` (and `*PreTrainedModel`), diffusers
    `ModelMixin`, and the model classes of `torchvision.models` and `timm` (one table in
    `torchlint/analysis/frameworks.py`). Extend it with the top-level config key
    `module-bases = ["mypkg.layers.Base"]`. A base defined in another file of the project counts
    too, through any number of files (`from .base import Base`, a re-export in a package's
    `__init__.py`), when that file lies under the checked paths or the working directory.

    ## Why is this bad?
    A plain tensor attribute is invisible to the module machinery: `.to(device)`/`.cuda()` do not
    move it and `state_dict()` does not save it. After `model.cuda()`, `forward` mixes a CPU
    tensor with CUDA activations: `RuntimeError: Expected all tensors to be on the same device`.

    ## Example
    ```python
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.mask = torch.tril(torch.ones(8, 8))

        def forward(self, scores):
            return scores.masked_fill(self.mask == 0, float("-inf"))
    ```

    ## Use instead
    ```python
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mask", torch.tril(torch.ones(8, 8)))

        def forward(self, scores):
            return scores.masked_fill(self.mask == 0, float("-inf"))
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [torch.nn.Module.register_buffer](https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.register_buffer)
    """

    code = "TL206"
    name = "unregistered-tensor-attribute"
    summary = "Plain tensor attribute in nn.Module: not moved by .to(), not in state_dict()"
    severity = "warning"
    default_enabled = False
    tags = ("correctness", "device", "module")
    requires_text = ('__init__',)
    options = {"module-bases": MODULE_BASES_OPTION}
    evidence = Evidence(generic_probe=True, probe=probe_unregistered_tensor, slice="construct-and-read-attribute", judge=judge_unregistered_tensor,
                        observe=observe_unregistered_tensor)

    def visit_Assign(self, node: ast.Assign, ctx: FileContext) -> None:
        fn = ctx.function
        if not isinstance(fn, ast.FunctionDef) or fn.name != "__init__" or len(ctx.functions) != 1:
            return
        if ctx.enclosing_module_class() is None:
            return
        name = ctx.call_name(node.value)
        if not _built_from_factory(node.value, ctx):
            return
        args = node.value.args if isinstance(node.value, ast.Call) else []
        if name in ("torch.tensor", "torch.as_tensor") and args \
                and not isinstance(args[0], (ast.List, ast.Tuple, ast.ListComp, ast.Call)):
            return  # maybe a 0-dim scalar (`torch.tensor(cfg.weight)`), which mixes with tensors on any device
        cls = ctx.classes[-1]
        key = ("TL206-uses", id(cls))
        uses = ctx.memo.get(key)
        if uses is None:
            uses = ctx.memo[key] = _attribute_uses(cls)
        for target in node.targets:
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self" \
                    and not _handled_elsewhere(uses, target.attr):  # type: ignore[arg-type]
                self.report(target, PlainTensorAttribute(attribute=target.attr))
