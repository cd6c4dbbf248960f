"""TL904: `default_collate`/`default_convert` taken from the private torch.utils.data._utils."""

from __future__ import annotations

import ast

from torchlint.checker import FileContext
from torchlint.edits import Fix, has_comment, make_fix, module_alias, replace, text_of
from torchlint.rules.base import Evidence, Rule, Violation

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional

_PRIVATE_MODULE = "torch.utils.data._utils.collate"
_PUBLIC = {f"{_PRIVATE_MODULE}.{n}": f"torch.utils.data.{n}" for n in ("default_collate", "default_convert")}


class PrivateCollateImport(Violation):
    names: tuple[str, ...]
    help = "Import from `torch.utils.data`"

    def message(self) -> str:
        listed = ", ".join(f"`{name}`" for name in self.names)
        return f"{listed} imported from the private `{_PRIVATE_MODULE}`"


class PrivateCollateName(Violation):
    name: str
    public: str

    def message(self) -> str:
        return f"`{self.name}` is private"

    def help_text(self) -> str:
        return f"Use `{self.public}`"


class NonPublicCollateImport(Rule):
    """## What it does
    Flags `default_collate` and `default_convert` taken from the private module
    `torch.utils.data._utils.collate`, imported or used as an attribute.

    ## Why is this bad?
    Modules under `_utils` are private: they can move or change without a deprecation period.
    Both functions are public as `torch.utils.data.default_collate` and
    `torch.utils.data.default_convert`.

    ## Example
    ```python
    from torch.utils.data._utils.collate import default_collate
    ```

    ## Use instead
    ```python
    from torch.utils.data import default_collate
    ```

    ## Fix safety
    Safe: the public names are the same functions. An import statement that also imports other
    private names, or holds a comment, is not rewritten.

    ## References
    - [torch.utils.data.default_collate](https://pytorch.org/docs/stable/data.html#torch.utils.data.default_collate)
    - TorchFix TOR104, TOR105
    """

    code = "TL904"
    name = "non-public-collate-import"
    summary = "`default_collate`/`default_convert` used from the private `torch.utils.data._utils`"
    peer_checks = {"TOR104": "covered for `default_collate`/`default_convert`, the two TorchFix lists", "TOR105": "covered"}  # rules_docs/peer-parity.md
    severity = "info"
    tags = ("migration",)
    precision = "very-high"
    requires_text = ("_utils.collate",)
    evidence = Evidence(reason="a statement about where a name is imported from: nothing to run")

    def visit_ImportFrom(self, node: ast.ImportFrom, ctx: FileContext) -> None:
        if node.level or node.module != _PRIVATE_MODULE:
            return
        names = [a for a in node.names if f"{_PRIVATE_MODULE}.{a.name}" in _PUBLIC]
        if not names:
            return
        self.report(node, PrivateCollateImport(names=tuple(a.name for a in names)), fix=_import_fix(node, ctx))

    def visit_Attribute(self, node: ast.Attribute, ctx: FileContext) -> None:
        if node.attr not in ("default_collate", "default_convert"):
            return
        name = ctx.qualname(node)
        if name not in _PUBLIC or not isinstance(node.value, ast.Attribute):
            return
        public = _PUBLIC[name]
        alias = module_alias(ctx.imports.aliases, "torch.utils.data")
        fix = make_fix(f"Use `{public}`", [replace(ctx.source, node, f"{alias}.{node.attr}")]) if alias else None
        self.report(node, PrivateCollateName(name=name, public=public), fix=fix)


def _import_fix(node: ast.ImportFrom, ctx: FileContext) -> Optional[Fix]:
    """`from torch.utils.data._utils.collate import default_collate` -> `from torch.utils.data
    import default_collate`, when the statement imports nothing else and holds no comment."""
    if any(f"{_PRIVATE_MODULE}.{a.name}" not in _PUBLIC for a in node.names) or has_comment(text_of(ctx.source, node)):
        return None
    names = ", ".join(a.name + (f" as {a.asname}" if a.asname else "") for a in node.names)
    return make_fix("Import from `torch.utils.data`",
                    [replace(ctx.source, node, f"from torch.utils.data import {names}")])
