"""TL901: a torch API that is deprecated or removed for the configured `torch-version`,
from the one data table in torchlint/data/deprecated_api.toml."""

from __future__ import annotations

import ast
from typing import Optional

from torchlint.analysis.torch_versions import DeprecatedApi, at_least, deprecated_apis
from torchlint.checker import FileContext
from torchlint.fix.edits import add_keyword, make_fix, module_alias, replace
from torchlint.rules.base import Rule, TORCH_VERSION_OPTION

_LAST_NAMES = frozenset(api.short for api in deprecated_apis().values())
_UPSAMPLE_MODES = {"upsample-nearest": 'mode="nearest"', "upsample-bilinear": 'mode="bilinear", align_corners=True'}


class DeprecatedTorchApi(Rule):
    code = "TL901"
    name = "deprecated-torch-api"
    summary = "Deprecated or removed torch API (for the configured torch-version)"
    severity = "warning"
    tags = ("migration", "deprecation")
    precision = "very-high"
    requires_text = tuple(sorted(_LAST_NAMES))
    options = {"torch-version": TORCH_VERSION_OPTION}
    verify_note = ("the table's `on_current` column was checked by calling every API on torch 2.13 "
                   "(tests/test_migrations.py repeats it whenever torch is installed)")

    # Calls only (a `with`, a decorator with arguments and a constructor are calls too): a
    # handler on every Name and Attribute node cost more than all the other rules' gates.
    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        func = node.func
        if isinstance(func, ast.Attribute):
            if func.attr in _LAST_NAMES:
                self._check(func, node, ctx)
        elif isinstance(func, ast.Name) and (func.id in _LAST_NAMES or func.id in self._aliases(ctx)) \
                and func.id not in self._rebound(ctx):
            self._check(func, node, ctx)

    def _aliases(self, ctx: FileContext) -> frozenset[str]:
        """Local names imported from the table under another name (`norm as tnorm`)."""
        aliases = ctx.imports.aliases
        cached = self.__dict__.get("_alias_cache")
        if cached is None or cached[0] != len(aliases):  # function-level imports add names
            table = deprecated_apis()
            cached = self._alias_cache = (len(aliases), frozenset(k for k, v in aliases.items() if v in table))
        return cached[1]

    def _rebound(self, ctx: FileContext) -> frozenset[str]:
        """Names the enclosing scope (or the module) also binds (`norm = nn.LayerNorm(d)`
        after `from torch import norm`, a parameter called `solve`): a bare use of those
        may not be the import."""
        cache: dict[int, frozenset[str]] = self.__dict__.setdefault("_rebound_by_scope", {})
        names: frozenset[str] = frozenset()
        for scope in {id(ctx.tree): ctx.tree, id(ctx.scope): ctx.scope}.values():
            found = cache.get(id(scope))
            if found is None:
                found = cache[id(scope)] = _bound_names(scope)
            names |= found
        return names

    def _check(self, node: ast.AST, call: ast.Call, ctx: FileContext) -> None:
        name = ctx.qualname(node)
        api = deprecated_apis().get(name) if name else None
        if api is None:
            return
        target = self.settings["torch-version"]
        if not at_least(target, api.deprecated):
            return  # the code must still run on a torch from before the replacement
        if api.removed:
            status = f"was removed in torch {api.removed}: on 2.13 it {api.on_current}"
        else:
            status = f"is deprecated since torch {api.deprecated} (2.13: {api.on_current})"
        why = f" ({api.why})" if api.why else ""
        use = " or ".join(f"`{part}`" for part in api.use.split(" or "))
        self.report(node, f"`{name}` {status}", help=f"Use {use}{why}",
                    severity="error" if api.removed else None, fix=_fix(node, api, ctx, call))


def _fix(node: ast.AST, api: DeprecatedApi, ctx: FileContext, call: ast.Call) -> Optional[dict]:
    if not api.fix or not isinstance(node, ast.Attribute):
        return None  # a bare imported name: its import would have to change too
    if api.fix == "rename":
        module, _, last = api.use.rpartition(".")
        alias = module_alias(ctx.imports.aliases, module)
        if alias is None:
            return None
        return make_fix(f"Use `{api.use}`", [replace(ctx.source, node, f"{alias}.{last}")])
    if any(k.arg is None or k.arg in ("mode", "align_corners") for k in call.keywords):
        return None
    if api.fix == "single-argument":
        alias = module_alias(ctx.imports.aliases, "torch.linalg")
        if alias is None or len(call.args) != 1 or call.keywords or isinstance(call.args[0], ast.Starred):
            return None
        return make_fix("Use `torch.linalg.cholesky`", [replace(ctx.source, node, f"{alias}.cholesky")])
    if api.fix in _UPSAMPLE_MODES:
        alias = module_alias(ctx.imports.aliases, "torch.nn")
        add = add_keyword(ctx.source, call, _UPSAMPLE_MODES[api.fix])
        if alias is None or add is None or len(call.args) > 2:
            return None
        # UpsamplingNearest2d/Bilinear2d are Upsample with these arguments fixed.
        return make_fix(f"Use `{api.use}`", [replace(ctx.source, node, f"{alias}.Upsample"), add])
    return None


def _bound_names(scope: ast.AST) -> frozenset[str]:
    """Names bound directly in a module or function (not in the functions it defines)."""
    names: set[str] = set()
    args = getattr(scope, "args", None)
    if isinstance(args, ast.arguments):
        names.update(a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg) if a)
    stack = list(getattr(scope, "body", []))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            continue
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        stack.extend(ast.iter_child_nodes(node))
    return frozenset(names)
