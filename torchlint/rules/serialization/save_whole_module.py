"""TL602: torch.save(model) pickles the whole module."""

from __future__ import annotations

import ast

from torchlint.analysis import inference
from torchlint.analysis.torch_api import TORCH_SAVE
from torchlint.checker import FileContext
from torchlint.rules.base import Evidence, Rule, Violation, arg_or_keyword, calls_ending, dotted

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional


class ModuleInSavedDict(Violation):
    module: str

    def message(self) -> str:
        return f"`torch.save` of a dict holding the whole module `{self.module}`: fragile and unsafe to load"

    def help_text(self) -> str:
        return f"Save `{self.module}.state_dict()` in the dict instead"


class WholeModuleSaved(Violation):
    module: str

    def message(self) -> str:
        return f"`torch.save({self.module})` pickles the whole module: fragile and unsafe to load"

    def help_text(self) -> str:
        return f"Save `{self.module}.state_dict()` instead"


class SaveWholeModule(Rule):
    """## What it does
    Flags `torch.save(model, ...)` where `model` is known to be an `nn.Module`, not a
    `state_dict()`: constructed from a class deriving from `nn.Module` (in this file, in another
    file of the project, or a framework base such as Lightning's), built by a torchvision or
    timm factory (`resnet18()`, `timm.create_model(...)`) or by a function of the project that
    returns one (`build_model(cfg)`), annotated `nn.Module`, or `self` in a module's method. A
    module held by a saved dict counts too (`torch.save({"net": net, "opt": opt.state_dict()})`).

    ## Why is this bad?
    Saving the module pickles the object graph: classes are stored by import path, so renaming
    or moving a class, or refactoring `__init__`, breaks loading old checkpoints; and loading
    requires `weights_only=False`, which executes arbitrary code (see {rule:unsafe-torch-load}).

    `--verify` reports this rule as `skipped`: whether the file loads is decided later, by the program that loads it (its torch.load arguments, the classes it allow-lists, whether the class can still be imported); since torch 2.6 a default torch.load refuses every pickled module whose class is not allow-listed, whatever the code's values, so a run here cannot come out either way.

    ## Example
    ```python
    import torchvision

    model = torchvision.models.resnet18(num_classes=10)
    torch.save(model, "model.pt")
    ```

    ## Use instead
    ```python
    import torchvision

    model = torchvision.models.resnet18(num_classes=10)
    torch.save(model.state_dict(), "model.pt")
    model.load_state_dict(torch.load("model.pt", weights_only=True))
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [Saving and loading models](https://pytorch.org/tutorials/beginner/saving_loading_models.html)
    """

    code = "TL602"
    name = "save-whole-module"
    summary = "torch.save of a whole nn.Module instead of its state_dict()"
    severity = "warning"
    tags = ("maintainability", "serialization")
    requires_text = ('save',)
    evidence = Evidence(reason=('whether the file loads is decided later, by the program that loads it (its torch.load '
                                'arguments, the classes it allow-lists, whether the class can still be imported); since torch 2.6 '
                                'a default torch.load refuses every pickled module whose class is not allow-listed, whatever '
                                "the code's values, so a run here cannot come out either way"))

    @calls_ending(TORCH_SAVE.lasts)
    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        if ctx.call_among(node, TORCH_SAVE) is None:
            return
        obj = arg_or_keyword(node, 0, "obj")
        if obj is None:
            return
        held = _dict_of(obj, node.lineno, ctx)
        if held is not None:  # `torch.save({"net": net, "opt": opt.state_dict()}, path)`
            module = next((v for v in held.values if inference.kind_of(v, ctx) == inference.MODULE), None)
            if module is not None:
                self.report(node, ModuleInSavedDict(module=dotted(module) or "a module"))
            return
        if inference.kind_of(obj, ctx) != inference.MODULE:
            return
        self.report(node, WholeModuleSaved(module=dotted(obj)))


def _dict_of(obj: ast.AST, lineno: int, ctx: FileContext) -> Optional[ast.Dict]:
    """The dict literal saved: given inline, or the value of the name saved (`ckpt = {...}`)."""
    if isinstance(obj, ast.Name):
        obj = ctx.value_before(obj, lineno)  # type: ignore[assignment]
    return obj if isinstance(obj, ast.Dict) else None
