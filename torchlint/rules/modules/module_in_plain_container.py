"""TL701: submodules kept in a plain list/tuple/dict are not registered."""

from __future__ import annotations

import ast

from torchlint.analysis import inference
from torchlint.checker import FileContext
from torchlint.edits import UNSAFE, make_fix, module_alias, replace, text_of
from torchlint.rules.base import Evidence, MODULE_BASES_OPTION, Rule, Violation

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional


def _registers_manually(cls: ast.ClassDef) -> bool:
    """`self.add_module(str(i), layer)` / `setattr(self, ...)` registers list members too."""
    for node in ast.walk(cls):
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Attribute) and f.attr in ("add_module", "register_module"):
                return True
            if isinstance(f, ast.Name) and f.id == "setattr" and node.args and \
                    isinstance(node.args[0], ast.Name) and node.args[0].id == "self":
                return True
    return False


# -- evidence (runs only in the --verify worker: see CONTRIBUTING.md) ----------------------
def probe_plain_container(params: dict, device: str) -> tuple[str, str]:
    import torch.nn as nn

    class M(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = [nn.Linear(2, 2), nn.Linear(2, 2)]

    n = len(list(M().parameters()))
    if n == 0:
        return "confirmed", "parameters() of a module holding 2 nn.Linear in a list yields 0 tensors"
    return "not-reproduced", f"parameters() yields {n} tensors"


def judge_plain_container(facts: dict, runs: list) -> Optional[tuple[str, str]]:
    import torch.nn as nn
    from _evidence import failed, flag

    rec = flag(runs)
    if rec is None or failed(rec, "constructing the module"):
        return failed(rec, "constructing the module")
    module, attr = rec.get("value"), str(facts.get("attribute", ""))
    if not attr:
        return None
    value = getattr(module, attr, None)
    items = list(value.values()) if isinstance(value, dict) else list(value) if isinstance(value, (list, tuple)) else []
    held = [p for m in items if isinstance(m, nn.Module) for p in m.parameters()]
    registered = {id(p) for p in module.parameters()} if isinstance(module, nn.Module) else set()
    missing = [p for p in held if id(p) not in registered]
    if missing:
        return ("confirmed", f"parameters() yields {len(registered)} tensors; the {len(missing)} parameter tensors of "
                             f"the modules in self.{attr} are not among them")
    return "not-reproduced", f"self.{attr} holds no unregistered parameters ({type(value).__name__})"


def observe_plain_container(build, facts: dict) -> tuple[str, str]:
    """The --verify observer on the user's own module (its file imported from the project,
    verify/project.py): are the modules held in the plain container part of the module's
    parameters and submodules? Copied for the worker like a probe: torch only."""
    import torch

    name, built = facts.get("attribute") or "", facts.get("built") or "the module"
    model = build()
    held = getattr(model, name, None) if name else None
    items = list(held.values()) if isinstance(held, dict) else list(held) if isinstance(held, (list, tuple)) else []
    modules = [m for m in items if isinstance(m, torch.nn.Module)]
    if not modules:
        return "not-reproduced", f"after `{built}`, `self.{name}` holds no nn.Module"
    registered = {id(p) for p in model.parameters()}
    theirs = [p for m in modules for p in m.parameters()]
    missing = [p for p in theirs if id(p) not in registered]
    if missing:
        return "confirmed", (f"{len(missing)} of the {len(theirs)} parameters of the {len(modules)} modules in "
                             f"`self.{name}` are not in `{built}`.parameters()")
    known = {id(m) for m in model.modules()}
    lost = [m for m in modules if id(m) not in known]
    if lost:
        return "confirmed", (f"{len(lost)} of the {len(modules)} modules in `self.{name}` are not among "
                             f"`{built}`.modules(): .train()/.eval() and .to() skip them")
    return "not-reproduced", f"the {len(modules)} modules in `self.{name}` are registered through another attribute"


class UnregisteredModules(Violation):
    kind: str  # "list" / "dict" / ...
    attribute: str

    def message(self) -> str:
        return f"Modules in plain {self.kind} `self.{self.attribute}` are not registered"

    def help_text(self) -> str:
        return f"Use `{'nn.ModuleDict' if self.kind == 'dict' else 'nn.ModuleList'}(...)`"


class ModuleInPlainContainer(Rule):
    """On the 2026-12 held-out corpus (54 projects, independent triage), 0 of 1 findings were true;
    off by default. Enable it with `--extend-select TL701`.

    ## What it does
    Flags, in an `nn.Module` subclass, a list, tuple or dict (literal or comprehension) containing
    `nn.Module` instances assigned to `self.<attr>`.

    Subclasses of framework modules count as Modules: `pytorch_lightning`/`lightning`
    `LightningModule`, Hugging Face `PreTrainedModel` (and `*PreTrainedModel`), diffusers
    `ModelMixin`, and the model classes of `torchvision.models` and `timm` (one table in
    `torchlint/analysis/frameworks.py`). Extend it with the top-level config key
    `module-bases = ["mypkg.layers.Base"]`. A base defined in another file of the project counts
    too, through any number of files (`from .base import Base`, a re-export in a package's
    `__init__.py`), when that file lies under the checked paths or the working directory.

    ## Why is this bad?
    `nn.Module` registers submodules only when they are assigned directly or held in
    `nn.ModuleList`/`nn.ModuleDict`. Modules in a plain container are invisible: their
    parameters are missing from `model.parameters()` (the optimizer never updates them),
    `.to()`/`.cuda()` do not move them, and `state_dict()` does not save them.

    ## Example
    ```python
    class MLP(nn.Module):
        def __init__(self, d, n):
            super().__init__()
            self.layers = [nn.Linear(d, d) for _ in range(n)]
    ```

    ## Use instead
    ```python
    class MLP(nn.Module):
        def __init__(self, d, n):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(d, d) for _ in range(n)])
    ```

    ## Fix safety
    Unsafe (applied with `--unsafe-fixes`): the container is wrapped in
    `nn.ModuleList(...)` / `nn.ModuleDict(...)` when every element is a module call (and a dict's
    keys are string literals). The parameters then join `parameters()`, the optimizer and
    `state_dict()`, so checkpoints saved before the fix lack those keys and no longer load with
    `strict=True`.

    ## References
    - [torch.nn.ModuleList](https://pytorch.org/docs/stable/generated/torch.nn.ModuleList.html)
    """

    code = "TL701"
    name = "module-in-plain-container"
    summary = "nn.Module instances in a plain list/dict attribute are not registered"
    severity = "error"
    default_enabled = False
    tags = ("correctness", "module")
    # `class ` too: a class may be a Module through a base class in another file.
    requires_text = ('Module', 'nn.', 'torch.nn', 'PreTrainedModel', 'ModelMixin', 'class ')
    options = {"module-bases": MODULE_BASES_OPTION}
    evidence = Evidence(generic_probe=True, probe=probe_plain_container, slice="construct-and-read-attribute", judge=judge_plain_container,
                        observe=observe_plain_container)

    def _container(self, value: ast.AST, ctx: FileContext) -> Optional[str]:
        elements: list[ast.AST] = []
        if isinstance(value, (ast.List, ast.Tuple)):
            kind = "list" if isinstance(value, ast.List) else "tuple"
            elements = list(value.elts)
        elif isinstance(value, ast.Dict):
            kind = "dict"
            elements = [v for v in value.values if v is not None]
        elif isinstance(value, (ast.ListComp, ast.GeneratorExp)):
            kind = "list"
            elements = [value.elt]
        elif isinstance(value, ast.DictComp):
            kind = "dict"
            elements = [value.value]
        else:
            return None
        if any(isinstance(e, ast.Call) and inference.kind_of(e, ctx) == inference.MODULE for e in elements):
            return kind
        return None

    def setup(self, ctx: FileContext) -> None:
        self._manual: dict[int, bool] = {}

    def visit_Assign(self, node: ast.Assign, ctx: FileContext) -> None:
        if not isinstance(node.value, (ast.List, ast.Tuple, ast.Dict, ast.ListComp, ast.GeneratorExp, ast.DictComp)):
            return
        cls = ctx.enclosing_module_class()
        if cls is None:
            return
        kind = self._container(node.value, ctx)
        if kind is None:
            return
        if id(cls) not in self._manual:
            self._manual[id(cls)] = _registers_manually(cls)
        if self._manual[id(cls)]:
            return
        for target in node.targets:
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                self.report(target, UnregisteredModules(kind=kind, attribute=target.attr), fix=_fix(node.value, kind, ctx))


def _fix(value: ast.AST, kind: str, ctx: FileContext):  # type: ignore[no-untyped-def]
    """`[a, b]` -> `nn.ModuleList([a, b])`, when every element is a module (ModuleList
    rejects anything else) and a dict's keys are strings (ModuleDict needs them)."""
    nn = module_alias(ctx.imports.aliases, "torch.nn")
    if nn is None:
        return None
    if isinstance(value, (ast.List, ast.Tuple)):
        if not value.elts or not all(isinstance(e, ast.Call) and inference.kind_of(e, ctx) == inference.MODULE
                                     for e in value.elts):
            return None
    elif isinstance(value, ast.Dict):
        if not value.keys or not all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in value.keys) \
                or not all(isinstance(v, ast.Call) and inference.kind_of(v, ctx) == inference.MODULE
                           for v in value.values):
            return None
    elif isinstance(value, ast.DictComp):
        return None  # its keys may not be strings
    holder = f"{nn}.ModuleDict" if kind == "dict" else f"{nn}.ModuleList"
    text = text_of(ctx.source, value)
    wrapped = f"{holder}({text})" if not isinstance(value, ast.GeneratorExp) or text.startswith("(") \
        else f"{holder}(({text}))"
    # Unsafe: the parameters join parameters(), the optimizer and state_dict() (new keys:
    # checkpoints saved before the fix no longer load with strict=True).
    return make_fix(f"Wrap in `{holder}`", [replace(ctx.source, value, wrapped)], UNSAFE)
