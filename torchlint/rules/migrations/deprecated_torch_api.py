"""TL901: a torch API that is deprecated or removed for the configured `torch-version`,
from the one data table in torchlint/data/deprecated_api.toml."""

from __future__ import annotations

import ast

from torchlint.analysis.torch_versions import DeprecatedApi, at_least, deprecated_apis
from torchlint.checker import FileContext
from torchlint.edits import Fix, add_keyword, make_fix, module_alias, replace
from torchlint.rules.base import Evidence, Option, Rule, TORCH_VERSION_OPTION, Violation, calls_ending

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional

_LAST_NAMES = frozenset(api.short for api in deprecated_apis().values())
_UPSAMPLE_MODES = {"upsample-nearest": 'mode="nearest"', "upsample-bilinear": 'mode="bilinear", align_corners=True'}


class DeprecatedApiUse(Violation):
    name: str  # as resolved, `torch.meshgrid`
    api: DeprecatedApi  # its entry in the deprecation table: versions, what it does now, the replacement

    def message(self) -> str:
        api = self.api
        if api.removed:
            status = f"was removed in torch {api.removed}: on 2.13 it {api.on_current}"
        else:
            status = f"is deprecated since torch {api.deprecated} (2.13: {api.on_current})"
        what = f"`{self.name}` without `{api.unless_keyword}=`" if api.unless_keyword else f"`{self.name}`"
        return f"{what} {status}"

    def help_text(self) -> str:
        why = f" ({self.api.why})" if self.api.why else ""
        use = " or ".join(f"`{part}`" for part in self.api.use.split(" or "))
        return f"Use {use}{why}"


class DeprecatedTorchApi(Rule):
    """## What it does
    Flags calls to torch APIs that are deprecated or removed (including `with` items and
    constructors), read from one data table shipped
    with torchlint (`torchlint/data/deprecated_api.toml`): the linear-algebra functions replaced
    by `torch.linalg` (`torch.solve`, `torch.symeig`, `torch.eig`, `torch.lstsq`,
    `torch.matrix_rank`, `torch.qr`, `torch.cholesky`, `torch.lu`, `torch.lu_solve`,
    `torch.triangular_solve`, `torch.chain_matmul`, `torch.svd`, `torch.norm`, `torch.ger`),
    `torch.range`, `nn.UpsamplingNearest2d`/`UpsamplingBilinear2d`,
    `torch.testing.assert_allclose`, `nn.utils.weight_norm`, `torch.backends.cuda.sdp_kernel`,
    `torch.utils._pytree._register_pytree_node`, `functorch.*` (now `torch.func.*`),
    `torch.set_default_tensor_type`, `torch.meshgrid` without `indexing=`,
    `F.upsample`/`upsample_nearest`/`upsample_bilinear`, `nn.utils.clip_grad_norm`, the
    `nn.init` names without a trailing `_`, `torch.cuda.memory_cached`/`max_memory_cached`,
    `nn.utils.stateless.functional_call`, and imports of the removed module `torch._six`.

    Of the rows the derivation added in 2026-12, only those for removed APIs (`torch._six`) are
    reported by default: on the 2026-12 held-out corpus (54 projects, independent triage) the
    added rows gave 1 true finding of 21 (the unguarded `torch._six` import). The others only
    warn, still give the same result, and their replacement is often missing on the torch a
    project targets (`meshgrid(indexing=)` arrived in 1.10). The rule's `all-deprecations`
    option reports them too. The rows that were in the table before held 19 of 20 true.

    The table is derived, not remembered: `scripts/derive_deprecations.py` calls each
    candidate API on the pinned torch (2.13) under `warnings.catch_warnings` and records what
    it did (raises, warns, or only documents the deprecation); the versions that deprecated
    or removed each API come from torch's release notes or its own warning. The message says
    which. Removed APIs are reported as errors. Linting never imports torch: TL901 reads the
    committed table, and a torch upgrade regenerates it.

    The `torch-version` setting (`torch-version = "2.4"` at the top level of the config, or
    `--torch-version`; default `"2.4"`) is the oldest torch the code must still run on: an API
    deprecated after that release is not reported, since its replacement may not exist there.

    ## Why is this bad?
    Removed APIs raise `RuntimeError` on current torch (`torch.solve`: "This function was
    deprecated since version 1.9 and is now removed"). Deprecated ones warn on every call, are
    no longer maintained (`torch.norm`'s docs: "its documentation and behavior may be
    incorrect"), and will be removed.

    ## Example
    ```python
    x = torch.solve(b, A).solution
    n = torch.norm(v, dim=1)
    batched = functorch.vmap(f)
    ```

    ## Use instead
    ```python
    x = torch.linalg.solve(A, b)
    n = torch.linalg.vector_norm(v, dim=1)
    batched = torch.func.vmap(f)
    ```

    ## Fix safety
    Safe, and offered only where the replacement is a drop-in with the same arguments and
    result: `torch.ger` → `torch.outer`, `functorch.X` → `torch.func.X`,
    `torch.cholesky(A)` (one argument) → `torch.linalg.cholesky(A)`,
    `nn.UpsamplingNearest2d(...)` → `nn.Upsample(..., mode="nearest")` and
    `nn.UpsamplingBilinear2d(...)` → `nn.Upsample(..., mode="bilinear", align_corners=True)`
    (those classes are `Upsample` with these arguments fixed), `F.upsample` → `F.interpolate`,
    `nn.init.normal` → `nn.init.normal_` (and the other `nn.init` names),
    `nn.utils.clip_grad_norm` → `clip_grad_norm_`, `torch.cuda.memory_cached` →
    `memory_reserved`, and `torch.meshgrid(x, y)` → `torch.meshgrid(x, y, indexing="ij")` (the
    behaviour it has without the argument). Uses through a bare imported
    name are not rewritten (the import would have to change too). The others change argument
    order, return types or defaults (the table's `why` column says how), so they are left to a
    person.

    ## References
    - [torch.linalg](https://pytorch.org/docs/stable/linalg.html)
    - [torch.func migrating from functorch](https://pytorch.org/docs/stable/func.migrating.html)
    - [TorchFix deprecated symbols](https://github.com/pytorch-labs/torchfix)
    """

    code = "TL901"
    name = "deprecated-torch-api"
    summary = "Deprecated or removed torch API (for the configured torch-version)"
    peer_checks = {"TOR001": "covered: the same linear-algebra, `torch.range`, upsampling, `assert_allclose`, `weight_norm`, `sdp_kernel`, pytree and `functorch.*` symbols, with the torch release that removed each and what torch 2.13 does when it is called", "TOR004": "partly: TL901 reports the call, where the code breaks, not the import line", "TOR101": "covered, for the configured `torch-version` (an API deprecated after the oldest supported torch is not reported: its replacement may not exist there)", "TOR103": "partly: reported at the call, as TOR004"}  # rules_docs/peer-parity.md
    severity = "warning"
    tags = ("migration", "deprecation")
    precision = "very-high"
    requires_text = tuple(sorted(_LAST_NAMES))
    options = {"torch-version": TORCH_VERSION_OPTION,
               "all-deprecations": Option(bool, False, "Also report the table's rows that are off by default (those with "
                                                       "an `off` note: deprecations that only warn, measured noisy).")}
    evidence = Evidence(reason=("the table's `on_current` column is what scripts/derive_deprecations.py saw when it "
                                "called every API on torch 2.13 (tests/test_migrations.py repeats it whenever torch "
                                "is installed)"))

    # Calls only (a `with`, a decorator with arguments and a constructor are calls too): a
    # handler on every Name and Attribute node cost more than all the other rules' gates.
    @calls_ending(_LAST_NAMES)
    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        func = node.func
        if isinstance(func, ast.Attribute):
            if func.attr in _LAST_NAMES:
                self._check(func, node, ctx)
        elif isinstance(func, ast.Name):
            # The semantic model resolves a bare name through this scope's imports and
            # bindings (`norm = nn.LayerNorm(d)` or a parameter called `solve` shadow imports).
            self._check(func, node, ctx)

    def visit_Import(self, node: ast.Import, ctx: FileContext) -> None:
        for alias in node.names:  # `import torch._six`
            self._check_module(node, alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom, ctx: FileContext) -> None:
        if node.level or not node.module:
            return
        self._check_module(node, node.module)  # `from torch._six import inf`
        for alias in node.names:  # `from torch import _six`
            self._check_module(node, f"{node.module}.{alias.name}")

    def _check_module(self, node: ast.AST, name: str) -> None:
        api = deprecated_apis().get(name)
        if api is not None and api.kind == "module":
            self._report(node, name, api, None)

    def _check(self, node: ast.AST, call: ast.Call, ctx: FileContext) -> None:
        name = ctx.qualname(node)
        api = deprecated_apis().get(name) if name else None
        if name is None or api is None or api.kind != "call":
            return
        if api.unless_keyword and any(k.arg in (api.unless_keyword, None) for k in call.keywords):
            return  # `torch.meshgrid(x, y, indexing="ij")`, or `**kwargs` that may carry it
        self._report(node, name, api, _fix(node, api, ctx, call))

    def _report(self, node: ast.AST, name: str, api: DeprecatedApi, fix: Optional[Fix]) -> None:
        if api.off and not self.settings["all-deprecations"]:
            return  # measured noisy: only with the option (see the docs)
        if not at_least(self.settings["torch-version"], api.deprecated):
            return  # the code must still run on a torch from before the replacement
        self.report(node, DeprecatedApiUse(name=name, api=api),
                    severity="error" if api.removed else None, fix=fix)


def _fix(node: ast.AST, api: DeprecatedApi, ctx: FileContext, call: ast.Call) -> Optional[Fix]:
    if api.fix == "indexing-ij":
        add = add_keyword(ctx.source, call, 'indexing="ij"')  # the behaviour without the argument
        return make_fix('Pass `indexing="ij"`', [add]) if add is not None else None
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

