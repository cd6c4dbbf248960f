"""TL702: an nn.Module subclass whose __init__ never calls super().__init__()."""

from __future__ import annotations

import ast

from torchlint.checker import FileContext
from torchlint.rules.base import Evidence, MODULE_BASES_OPTION, Rule, Violation

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional


def _is_init_call(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "__init__"


def _calls_base_init(fn: ast.FunctionDef) -> bool:
    # Most calls are a statement of the body itself: found without walking a large __init__.
    if any(isinstance(s, ast.Expr) and _is_init_call(s.value) for s in fn.body):
        return True
    # super().__init__(), super(C, self).__init__(), Base.__init__(self), wherever they are
    return any(_is_init_call(node) for node in ast.walk(fn))


def _calls_self_method(fn: ast.FunctionDef, names: set[str]) -> bool:
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in names \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "self":
            return True
    return False


# -- evidence (runs only in the --verify worker: see CONTRIBUTING.md) ----------------------
def probe_missing_super(params: dict, device: str) -> tuple[str, str]:
    import torch.nn as nn
    from _evidence import first_line, raises

    class M(nn.Module):
        def __init__(self) -> None:
            self.fc = nn.Linear(2, 2)

    exc = raises(M)
    if exc is not None:
        return "confirmed", first_line(exc)
    return "not-reproduced", "no error"


def judge_missing_super(facts: dict, runs: list) -> Optional[tuple[str, str]]:
    from _evidence import expect_raise

    return expect_raise(runs, lambda exc: isinstance(exc, AttributeError) and "__init__() call" in str(exc),
                        "constructing the module",
                        lambda rec: "the module was constructed: __init__ assigns no submodule, parameter or buffer")


def observe_missing_super(build, facts: dict) -> tuple[str, str]:
    """The --verify observer on the user's own module (its file imported from the project,
    verify/project.py): build it and see whether nn.Module's own __init__ ran. Copied for
    the worker like a probe: torch only."""
    import torch

    built = facts.get("built") or "the module"
    try:
        model = build()
    except AttributeError as exc:
        if "__init__() call" not in str(exc):
            raise
        return "confirmed", f"`{built}` raised AttributeError: {str(exc).splitlines()[0]}"
    if isinstance(model, torch.nn.Module) and "_parameters" not in vars(model):
        return "confirmed", (f"`{built}` was built, but nn.Module.__init__ never ran on it: it has no parameter "
                             "table, so calling it, .to() or state_dict() fails")
    return "not-reproduced", f"`{built}` was built and nn.Module.__init__ ran on it"


class SuperInitNotCalled(Violation):
    cls: str
    help = "Call `super().__init__()` first"

    def message(self) -> str:
        return f"`{self.cls}.__init__` never calls `super().__init__()`"


class MissingSuperInit(Rule):
    """## What it does
    Flags an `nn.Module` subclass (direct, or through classes of the same file) whose `__init__`
    never calls `super().__init__()`, `super(Cls, self).__init__()` or `Base.__init__(self)`.
    Reported at `def __init__`.

    Subclasses of framework modules count as Modules: `pytorch_lightning`/`lightning`
    `LightningModule`, Hugging Face `PreTrainedModel` (and `*PreTrainedModel`), diffusers
    `ModelMixin`, and the model classes of `torchvision.models` and `timm` (one table in
    `torchlint/analysis/frameworks.py`). Extend it with the top-level config key
    `module-bases = ["mypkg.layers.Base"]`. A base defined in another file of the project counts
    too, through any number of files (`from .base import Base`, a re-export in a package's
    `__init__.py`), when that file lies under the checked paths or the working directory.

    ## Why is this bad?
    `nn.Module.__init__` creates the dictionaries that hold parameters, buffers and submodules.
    Without it the first assignment of a submodule or parameter raises
    `AttributeError: cannot assign module before Module.__init__() call`.

    ## Example
    ```python
    class Net(nn.Module):
        def __init__(self):
            self.fc = nn.Linear(4, 2)
    ```

    ## Use instead
    ```python
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2)
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [torch.nn.Module](https://pytorch.org/docs/stable/generated/torch.nn.Module.html)
    """

    code = "TL702"
    name = "missing-super-init"
    summary = "nn.Module subclass __init__ does not call super().__init__()"
    severity = "error"
    tags = ("correctness", "module")
    requires_text = ('__init__',)
    options = {"module-bases": MODULE_BASES_OPTION}
    precision = "very-high"
    evidence = Evidence(generic_probe=True, probe=probe_missing_super, slice="construct", judge=judge_missing_super,
                        crash=r"before Module\.__init__\(\) call",
                        observe=observe_missing_super)

    def visit_ClassDef(self, node: ast.ClassDef, ctx: FileContext) -> None:
        # A stub (.pyi) declares `__init__`'s signature; it has no body to call anything.
        if ctx.source.path.lower().endswith(".pyi") or not ctx.is_module_class(node):
            return
        init = next((s for s in node.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)
        if init is None or _calls_base_init(init):
            return
        # `__init__` may delegate to a method that calls the base __init__.
        initializers = {s.name for s in node.body if isinstance(s, ast.FunctionDef) and s is not init
                        and _calls_base_init(s)}
        if _calls_self_method(init, initializers):
            return
        self.report(init, SuperInitNotCalled(cls=node.name))
