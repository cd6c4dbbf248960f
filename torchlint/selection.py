"""Rule selection by code prefix, with ruff's semantics: `TL1`, `TL101`, `ALL`; within
one layer the most specific prefix wins and, at equal specificity, ignore wins."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Optional

from torchlint import catalog


class SelectionError(ValueError):
    pass


def validate_prefix(prefix: str) -> str:
    prefix = prefix.strip().upper()
    if prefix == "ALL":
        return prefix
    if not prefix.startswith("TL") or not any(code.startswith(prefix) for code in catalog.static_codes()):
        known = ", ".join(sorted(catalog.static_codes()))
        raise SelectionError(f"unknown rule selector {prefix!r}: expected ALL or a code/prefix of one of {known}")
    return prefix


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

    def apply(self, enabled: set[str]) -> set[str]:
        positive = (self.select or []) + self.extend_select
        result = set()
        for code in catalog.static_codes():
            pos = max((_specificity(p, code) for p in positive), default=-1)
            neg = max((_specificity(p, code) for p in self.ignore), default=-1)
            if pos < 0 and neg < 0:
                keep = self.select is None and code in enabled
            else:
                keep = pos > neg
            if keep:
                result.add(code)
        return result


def default_codes() -> set[str]:
    return {r.code for r in catalog.static_rules() if r.default_enabled}


def resolve(layers: Iterable[SelectionLayer]) -> set[str]:
    enabled = default_codes()
    for layer in layers:
        enabled = layer.apply(enabled)
    return enabled


def parse_list(value: Iterable[str]) -> list[str]:
    """Accepts ['TL1', 'TL201'] or comma-joined strings, validating each selector."""
    out = []
    for item in value:
        for part in str(item).split(","):
            if part.strip():
                out.append(validate_prefix(part))
    return out
