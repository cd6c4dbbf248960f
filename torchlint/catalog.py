"""The one catalog of codes: every static rule and every runtime check, found by walking the
family packages `torchlint/rules/<family>/` (a module holds its rule or check; nothing else
lists them). Selection, config validation, SARIF, the language server, `torchlint rule`,
`torchlint run` and the docs generator all read it.

Discovery imports the rule modules, so rules never import this module at their top level
(TL001, which must tell a real code from a made-up one, asks for `static_codes()` when it runs)."""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache
from typing import Union

import torchlint.rules as _rules_package
from torchlint.rules.base import SEVERITIES, Rule
from torchlint.runtime.checks import RuntimeCheck

# The code's hundreds digit names its family: TL4xx lives in torchlint/rules/losses/.
FAMILIES = ("meta", "autograd", "dtype_device", "data", "losses", "distributed", "serialization",
            "modules", "performance", "migrations")

Entry = Union[type[Rule], type[RuntimeCheck]]


def family_of(code: str) -> str:
    return FAMILIES[int(code[2])]


def _declared_in(module: object) -> list[Entry]:
    found: list[Entry] = []
    for value in vars(module).values():
        if (isinstance(value, type) and issubclass(value, (Rule, RuntimeCheck))
                and value.__module__ == getattr(module, "__name__", None) and "code" in vars(value)):
            found.append(value)
    return found


@lru_cache(maxsize=None)
def _discover() -> tuple[Entry, ...]:
    entries: list[Entry] = []
    for family in FAMILIES:
        package = importlib.import_module(f"{_rules_package.__name__}.{family}")
        for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            for entry in _declared_in(module):
                if family_of(entry.code) != family:
                    raise AssertionError(f"{entry.code} belongs in rules/{family_of(entry.code)}/, not rules/{family}/")
                entries.append(entry)
    entries.sort(key=lambda e: e.code)
    _check(entries)
    return tuple(entries)


def _check(entries: list[Entry]) -> None:
    codes = [e.code for e in entries]
    names = [e.name for e in entries]
    duplicate = {c for c in codes if codes.count(c) > 1} | {n for n in names if names.count(n) > 1}
    if duplicate:
        raise AssertionError(f"duplicate rule code or name: {sorted(duplicate)}")
    bad = [e.code for e in entries if e.severity not in SEVERITIES]
    if bad:
        raise AssertionError(f"{bad}: severity must be one of " + ", ".join(SEVERITIES))


def entries() -> tuple[Entry, ...]:
    """Every static rule and runtime check, in code order."""
    return _discover()


def static_rules() -> tuple[type[Rule], ...]:
    """The AST rules (`check`), in code order."""
    return tuple(e for e in _discover() if issubclass(e, Rule))  # type: ignore[misc]


def runtime_checks() -> tuple[type[RuntimeCheck], ...]:
    """The checks only a run can make (`torchlint run`), in code order."""
    return tuple(e for e in _discover() if issubclass(e, RuntimeCheck))  # type: ignore[misc]


@lru_cache(maxsize=None)
def by_code() -> dict[str, Entry]:
    return {e.code: e for e in _discover()}


@lru_cache(maxsize=None)
def by_name() -> dict[str, Entry]:
    return {e.name: e for e in _discover()}


def lookup(code_or_name: str) -> Union[Entry, None]:
    """A rule or check by its code (any case) or its name."""
    return by_code().get(code_or_name.upper()) or by_name().get(code_or_name)


def static_rule(code_or_name: str) -> Union[type[Rule], None]:
    """The static rule with this code or name, or None (also for a runtime check's)."""
    entry = lookup(code_or_name)
    return entry if entry is not None and issubclass(entry, Rule) else None  # type: ignore[return-value]


def is_static(entry: Entry) -> bool:
    return issubclass(entry, Rule)


@lru_cache(maxsize=None)
def static_codes() -> frozenset[str]:
    return frozenset(r.code for r in static_rules())


@lru_cache(maxsize=None)
def runtime_codes() -> frozenset[str]:
    return frozenset(c.code for c in runtime_checks())
