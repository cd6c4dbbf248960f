"""TL601: torch.load without weights_only=True."""

from __future__ import annotations

import ast

from torchlint.checker import FileContext
from torchlint.fix.edits import UNSAFE, add_keyword, make_fix
from torchlint.analysis.torch_versions import at_least
from torchlint.rules.base import TORCH_VERSION_OPTION, Rule, has_star_kwargs, keyword, literal


def _catches_type_error(node: ast.AST) -> bool:
    if isinstance(node, ast.ExceptHandler) and node.type is not None:
        names = [node.type] if not isinstance(node.type, ast.Tuple) else node.type.elts
        return any(isinstance(n, ast.Name) and n.id == "TypeError" for n in names)
    return False


def _in_type_error_fallback(ctx: FileContext) -> bool:
    return ctx.any_ancestor("except-type-error", _catches_type_error)


class UnsafeTorchLoad(Rule):
    code = "TL601"
    name = "unsafe-torch-load"
    summary = "torch.load with weights_only=False (or unset) can execute arbitrary code"
    severity = "warning"
    tags = ("security", "serialization")
    requires_text = ('load',)
    security_severity = 8.8
    options = {"torch-version": TORCH_VERSION_OPTION}

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        if ctx.call_name(node) != "torch.load" or has_star_kwargs(node):
            return
        kw = keyword(node, "weights_only")
        if kw is not None:
            value = literal(kw.value)
            if value is False:
                self.report(node, "`torch.load(weights_only=False)` runs code from a malicious checkpoint",
                            help="Load only trusted files, or save a `state_dict()` and use `weights_only=True`",
                            severity="error", params={"explicit_false": True})
            return
        if _in_type_error_fallback(ctx):
            return  # the fallback for torch versions without weights_only
        if at_least(self.settings["torch-version"], "2.6"):
            return  # weights_only defaults to True from torch 2.6: the hazard cannot occur
        self.report(node, "`torch.load` without `weights_only=` unpickles arbitrary code before torch 2.6",
                    help="Pass `weights_only=True` and load a `state_dict()`", params={"explicit_false": False},
                    fix=_fix(node, ctx))


def _fix(node: ast.Call, ctx: FileContext):  # type: ignore[no-untyped-def]
    add = add_keyword(ctx.source, node, "weights_only=True")
    # Unsafe: a checkpoint holding whole objects (not tensors and containers) stops loading.
    return make_fix("Pass `weights_only=True`", [add], UNSAFE) if add is not None else None
