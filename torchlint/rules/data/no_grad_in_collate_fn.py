"""TL305 (off by default): torch.no_grad() inside a collate_fn."""

from __future__ import annotations

import ast

from torchlint.analysis.scopes import grad_mode_of
from torchlint.analysis.torch_api import DATALOADER
from torchlint.checker import FileContext
from torchlint.rules.base import Evidence, Rule, Violation, keyword


class NoGradInCollate(Violation):
    collate_fn: str
    help = "Remove it"

    def message(self) -> str:
        return f"`torch.no_grad()` in collate_fn `{self.collate_fn}` has no effect"


class NoGradInCollateFn(Rule):
    """## What it does
    Flags `with torch.no_grad():` (or a `@torch.no_grad()` decorator) inside a function passed as
    `collate_fn` to a `DataLoader`. Off by default: harmless, only noise.

    ## Why is this bad?
    Collation stacks dataset samples, which carry no autograd graph, so `no_grad` changes
    nothing; in worker processes grad mode is per thread anyway. It suggests a misunderstanding
    of where gradients are recorded.

    `--verify` reports this rule as `skipped`: the pattern has no effect to observe; it is flagged as noise, not a wrong result.

    ## Example
    ```python
    def collate(batch):
        with torch.no_grad():
            return torch.stack(batch)

    loader = DataLoader(dataset, batch_size=32, collate_fn=collate)
    ```

    ## Use instead
    ```python
    def collate(batch):
        return torch.stack(batch)

    loader = DataLoader(dataset, batch_size=32, collate_fn=collate)
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [torch.utils.data](https://pytorch.org/docs/stable/data.html)
    """

    code = "TL305"
    name = "no-grad-in-collate-fn"
    summary = "torch.no_grad() inside a collate_fn has no effect"
    severity = "info"
    default_enabled = False
    tags = ("clarity", "data-loading")
    requires_text = ('collate_fn',)
    evidence = Evidence(reason='the pattern has no effect to observe; it is flagged as noise, not a wrong result')


    # The walk records grad-disabling sites per module-level function and the names passed
    # as `collate_fn=`; end_file matches the two (a collate_fn is often defined after use).
    def setup(self, ctx: FileContext) -> None:
        self.collate_names: set[str] = set()
        self.sites: list[tuple[str, ast.AST]] = []  # (module-level function, no_grad site)

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        if ctx.call_name(node) == DATALOADER:
            kw = keyword(node, "collate_fn")
            if kw is not None and isinstance(kw.value, ast.Name):
                self.collate_names.add(kw.value.id)

    def _visit_function(self, node: ast.AST, ctx: FileContext) -> None:
        if not ctx.functions and not ctx.classes:
            self.sites += [(node.name, d) for d in node.decorator_list  # type: ignore[attr-defined]
                           if _disables_grad(d, ctx)]

    def _visit_with(self, node: ast.AST, ctx: FileContext) -> None:
        if len(ctx.functions) == 1 and not ctx.classes:
            name = ctx.functions[0].name  # type: ignore[attr-defined]
            self.sites += [(name, item.context_expr) for item in node.items  # type: ignore[attr-defined]
                           if _disables_grad(item.context_expr, ctx)]

    visit_FunctionDef = _visit_function
    visit_AsyncFunctionDef = _visit_function
    visit_With = _visit_with
    visit_AsyncWith = _visit_with

    def end_file(self, ctx: FileContext) -> None:
        for name, site in self.sites:
            if name in self.collate_names:
                self.report(site, NoGradInCollate(collate_fn=name))


def _disables_grad(expr: ast.AST, ctx: FileContext) -> bool:
    mode = grad_mode_of(expr, ctx.imports)
    return mode is not None and mode[0]
