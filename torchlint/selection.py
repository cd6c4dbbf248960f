"""Rule selection by code prefix, with ruff's semantics: `TL1`, `TL101`, `ALL`; within
one layer the most specific prefix wins and, at equal specificity, ignore wins.

One `Selector` per code table: `STATIC` over the static rules serves `check` and config
files; `torchlint run` extends it with the runtime checks (`Selector.extended`)."""

from __future__ import annotations


from torchlint.fast_dataclass import dataclass, field
from torchlint.rules import lazy

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterable, Optional


class SelectionError(ValueError):
    pass


def _specificity(prefix: str, code: str) -> int:
    if prefix == "ALL":
        return 0
    return len(prefix) if code.startswith(prefix) else -1


@dataclass
class SelectionLayer:
    """One source of selection settings: a config file, or the command line."""

    select: Optional[list[str]] = None
    extend_select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)

    def apply(self, enabled: set[str], codes: Optional[Iterable[str]] = None) -> set[str]:
        """`enabled` after this layer, over the code table `codes`."""
        positive = (self.select or []) + self.extend_select
        result = set()
        for code in (lazy.static_codes() if codes is None else codes):
            pos = max((_specificity(p, code) for p in positive), default=-1)
            neg = max((_specificity(p, code) for p in self.ignore), default=-1)
            if pos < 0 and neg < 0:
                keep = self.select is None and code in enabled
            else:
                keep = pos > neg
            if keep:
                result.add(code)
        return result


@dataclass(frozen=True)
class Selector:
    """Prefix selection over one code table, starting from its default-on codes."""

    codes: tuple[str, ...]
    default: frozenset[str]

    def validate(self, prefix: str) -> str:
        prefix = prefix.strip().upper()
        if prefix == "ALL":
            return prefix
        if not prefix.startswith("TL") or not any(code.startswith(prefix) for code in self.codes):
            known = ", ".join(sorted(self.codes))
            raise SelectionError(f"unknown rule selector {prefix!r}: expected ALL or a code/prefix of one of {known}")
        return prefix

    def parse(self, value: Iterable[str]) -> list[str]:
        """Accepts ['TL1', 'TL201'] or comma-joined strings, validating each selector."""
        out = []
        for item in value:
            for part in str(item).split(","):
                if part.strip():
                    out.append(self.validate(part))
        return out

    def resolve(self, layers: Iterable[SelectionLayer]) -> set[str]:
        enabled = set(self.default)
        for layer in layers:
            enabled = layer.apply(enabled, self.codes)
        return enabled

    def extended(self, codes: Iterable[str], default_on: bool = True) -> "Selector":
        """This table plus more codes (runtime checks), on by default unless `default_on` is False."""
        more = tuple(codes)
        return Selector(tuple(sorted({*self.codes, *more})), self.default | (frozenset(more) if default_on else set()))

    def only(self, codes: Iterable[str]) -> "Selector":
        """The same selection restricted to some of the codes (what `run` reports of its checks)."""
        keep = frozenset(codes)
        return Selector(tuple(c for c in self.codes if c in keep), self.default & keep)


# From the generated index: selecting rules imports none of them.
STATIC = Selector(tuple(sorted(lazy.static_codes())), lazy.default_codes())
validate_prefix = STATIC.validate
parse_list = STATIC.parse
resolve = STATIC.resolve


def default_codes() -> set[str]:
    return set(STATIC.default)
