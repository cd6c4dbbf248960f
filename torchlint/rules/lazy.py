"""The static rules as the generated index (rules/index.py) describes them, without importing
them: selection, settings and the walk's prefilter read the index, and a rule's module is
imported only when a file's text can wake the rule. Importing all ~70 rule modules cost more
than linting one file; a cache hit now imports none.

`torchlint.catalog` stays the source of truth (it imports every rule); tests/test_catalog.py
checks that the index agrees with it, and scripts/generate_all.py rewrites the index."""

from __future__ import annotations

import importlib
import sys
from functools import lru_cache

from torchlint.rules.index import RULES, RUNTIME_CODES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional


class LazyRule:
    """Stands in for a rule class in the walk (checker.RuleClass) and in reports (the docs'
    `Documented`, SARIF's rule descriptors): its code, prefilter and metadata come from the
    index; the class is imported when the walk first instantiates it."""

    __slots__ = ("code", "name", "module", "class_name", "default_enabled", "requires_text", "option_keys",
                 "summary", "severity", "tags", "precision", "security_severity")

    def __init__(self, code: str, name: str, module: str, class_name: str, default_enabled: bool,
                 requires_text: tuple[str, ...], option_keys: tuple[str, ...], summary: str, severity: str,
                 tags: tuple[str, ...], precision: str, security_severity: Optional[float]) -> None:
        self.code, self.name, self.module, self.class_name = code, name, module, class_name
        self.default_enabled, self.requires_text, self.option_keys = default_enabled, requires_text, option_keys
        self.summary, self.severity, self.tags = summary, severity, tags
        self.precision, self.security_severity = precision, security_severity

    def applies_to(self, text: str) -> bool:
        """`Rule.applies_to`, from the index's copy of `requires_text`."""
        return not self.requires_text or any(t in text for t in self.requires_text)

    def load(self) -> Any:
        """The rule class itself; its first import is not charged to the file's lint budget."""
        module = sys.modules.get(self.module)
        if module is None:
            from torchlint.budget import paused

            with paused():
                module = importlib.import_module(self.module)
        return getattr(module, self.class_name)

    def __call__(self, ctx: Any, settings: Optional[dict[str, Any]] = None) -> Any:
        return self.load()(ctx, settings)

    def __repr__(self) -> str:
        return f"LazyRule({self.code})"


@lru_cache(maxsize=None)
def by_code() -> dict[str, LazyRule]:
    return {row[0]: LazyRule(*row) for row in RULES}


def static_codes() -> frozenset[str]:
    return frozenset(by_code())


def default_codes() -> frozenset[str]:
    return frozenset(code for code, rule in by_code().items() if rule.default_enabled)


def runtime_codes() -> frozenset[str]:
    return frozenset(RUNTIME_CODES)
