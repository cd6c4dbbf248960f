"""Per-file import alias table: resolves `T.nn.functional.relu` to `torch.nn.functional.relu`."""

from __future__ import annotations

import ast

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable, Iterable, Optional, Protocol

# Public re-exports that real code spells both ways; normalise to one name so
# rules match a single qualified name.
_CANONICAL = {
    "torch.nn.parallel.distributed.DistributedDataParallel": "torch.nn.parallel.DistributedDataParallel",
    "torch.utils.data.dataloader.DataLoader": "torch.utils.data.DataLoader",
    "torch.utils.data.distributed.DistributedSampler": "torch.utils.data.DistributedSampler",
    "torch.utils.data.dataset.Dataset": "torch.utils.data.Dataset",
    "torch.utils.data.dataset.IterableDataset": "torch.utils.data.IterableDataset",
    "torch.nn.modules.module.Module": "torch.nn.Module",
    "torch.nn.parameter.Parameter": "torch.nn.Parameter",
    "torch.cuda.amp.autocast_mode.autocast": "torch.cuda.amp.autocast",
    "torch.amp.autocast_mode.autocast": "torch.autocast",
    "torch.amp.autocast": "torch.autocast",
    "torch.autograd.grad_mode.no_grad": "torch.no_grad",
    "torch.autograd.no_grad": "torch.no_grad",
    "torch.autograd.grad_mode.enable_grad": "torch.enable_grad",
    "torch.autograd.enable_grad": "torch.enable_grad",
    "torch.autograd.grad_mode.inference_mode": "torch.inference_mode",
    "torch.autograd.inference_mode": "torch.inference_mode",
    "torch.autograd.grad_mode.set_grad_enabled": "torch.set_grad_enabled",
    "torch.autograd.set_grad_enabled": "torch.set_grad_enabled",
    "torch.nn.DataParallel": "torch.nn.DataParallel",
    "torch.amp.grad_scaler.GradScaler": "torch.amp.GradScaler",
    "torch.cuda.amp.grad_scaler.GradScaler": "torch.cuda.amp.GradScaler",
}
_MODULE_PREFIXES = {
    "torch.nn.modules.loss.": "torch.nn.",
    "torch.nn.modules.dropout.": "torch.nn.",
    "torch.nn.modules.container.": "torch.nn.",
    "torch.nn.modules.linear.": "torch.nn.",
    "torch.nn.modules.conv.": "torch.nn.",
    "torch.nn.modules.activation.": "torch.nn.",
    "torch.nn.modules.": "torch.nn.",
}


def canonical(name: str) -> str:
    if name in _CANONICAL:
        return _CANONICAL[name]
    for prefix, repl in _MODULE_PREFIXES.items():
        if name.startswith(prefix):
            rest = name[len(prefix):]
            # torch.nn.modules.loss.CrossEntropyLoss -> torch.nn.CrossEntropyLoss
            return repl + rest.split(".", 1)[-1] if "." in rest else repl + rest
    return name


def is_module_class_name(qualname: str) -> bool:
    """`torch.nn.Linear`, `torch.nn.parallel.DistributedDataParallel`: nn.Module classes by
    torch's naming; not parameters, nor helper types under torch.nn.utils (PackedSequence)."""
    if not qualname.startswith("torch.nn.") or qualname.startswith(("torch.nn.utils.", "torch.nn.functional.")):
        return False
    last = qualname.rsplit(".", 1)[1]
    return last[:1].isupper() and not last.endswith("Parameter")


class QualNames(frozenset):
    """Qualified names a rule looks for, with their last components: `qualify` of `a.b.f`
    always ends in `.f` (`canonical` keeps the last component), so a call `x.g(...)` can be
    turned away by its attribute alone, before any name is resolved."""

    lasts: frozenset[str]

    def __new__(cls, names: Iterable[str]) -> "QualNames":
        self = super().__new__(cls, names)
        self.lasts = frozenset(n.rpartition(".")[2] for n in self)
        return self


def qualify(node: ast.AST, resolve_base: Callable[[str], Optional[str]]) -> Optional[str]:
    """`a.b.c` -> the canonical qualified name, given what the base name `a` stands for."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    base = resolve_base(node.id)
    if base is None:
        return None
    if parts:
        parts.reverse()
        return canonical(base + "." + ".".join(parts))
    return canonical(base)


if TYPE_CHECKING:
    class QualnameResolver(Protocol):
        """Anything that turns `T.nn.Linear` into `torch.nn.Linear` (a table, or a scoped view)."""

        def qualname(self, node: ast.AST) -> Optional[str]: ...


class ImportTable:
    """Maps names bound by import statements to the qualified names they stand for."""

    __slots__ = ("aliases",)

    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}

    def add(self, node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    self.aliases[alias.asname] = alias.name
                else:
                    top = alias.name.split(".", 1)[0]
                    self.aliases[top] = top
        elif isinstance(node, ast.ImportFrom):
            if node.level or not node.module:
                return  # relative imports never name torch
            for alias in node.names:
                if alias.name == "*":
                    continue
                self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"

    def collect_module_level(self, tree: ast.Module) -> None:
        """Imports at module level, including those under if/try/with (TYPE_CHECKING,
        optional-dependency guards). Function-level imports are added as the walk meets them."""
        stack = list(tree.body)
        while stack:
            node = stack.pop()
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                self.add(node)
            elif isinstance(node, (ast.If, ast.Try, ast.With)):
                stack.extend(node.body)
                stack.extend(getattr(node, "orelse", ()))
                stack.extend(getattr(node, "finalbody", ()))
                for handler in getattr(node, "handlers", ()):
                    stack.extend(handler.body)
            elif type(node).__name__ == "TryStar":
                stack.extend(node.body)  # type: ignore[attr-defined]

    def qualname(self, node: ast.AST) -> Optional[str]:
        """`F.cross_entropy` -> `torch.nn.functional.cross_entropy`; None when the base
        name was not imported (a local variable, an attribute of `self`, ...)."""
        return qualify(node, self.aliases.get)

    def call_name(self, node: ast.AST) -> Optional[str]:
        return self.qualname(node.func) if isinstance(node, ast.Call) else None

