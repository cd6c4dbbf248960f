"""TL305 (off by default): torch.no_grad() inside a collate_fn."""

from __future__ import annotations

import ast

from torchlint.analysis.scopes import grad_mode_of, iter_scope
from torchlint.analysis.torch_api import DATALOADER
from torchlint.checker import FileContext
from torchlint.rules.base import Rule, keyword


class NoGradInCollateFn(Rule):
    code = "TL305"
    name = "no-grad-in-collate-fn"
    summary = "torch.no_grad() inside a collate_fn has no effect"
    severity = "info"
    default_enabled = False
    tags = ("clarity", "data-loading")
    requires_text = ('collate_fn',)
    verify_note = 'the pattern has no effect to observe; it is flagged as noise, not a wrong result'

    def setup(self, ctx: FileContext) -> None:
        self.collate_names: set[str] = set()

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        if ctx.call_name(node) == DATALOADER:
            kw = keyword(node, "collate_fn")
            if kw is not None and isinstance(kw.value, ast.Name):
                self.collate_names.add(kw.value.id)

    def end_file(self, ctx: FileContext) -> None:
        for fn in iter_scope(ctx.tree.body):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or fn.name not in self.collate_names:
                continue
            sites = [d for d in fn.decorator_list if (grad_mode_of(d, ctx.imports) or (False,))[0]]
            sites += [item.context_expr for n in iter_scope(fn.body) if isinstance(n, (ast.With, ast.AsyncWith))
                      for item in n.items if (grad_mode_of(item.context_expr, ctx.imports) or (False,))[0]]
            for site in sites:
                self.report(site, f"`torch.no_grad()` in collate_fn `{fn.name}` has no effect", help="Remove it")
