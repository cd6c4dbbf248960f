"""Typed per-rule options: `Option` declares a rule's setting under
`[tool.torchlint.options.<rule name or code>]` with its type, and checks a config's value
against it. The same declaration gives the JSON schema (torchlint/data/schema.json) and the
rule's doc page its Options section (scripts/generate_all.py)."""

from __future__ import annotations

import math
import re

from torchlint.fast_dataclass import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional

# The value types an option may have. `bool` is checked before `int`: Python's True is an int,
# TOML's is not.
_TYPES = (bool, int, float, str, list)
_JSON_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array"}


@dataclass(frozen=True)
class Option:
    """A per-rule setting. `type` is bool, int, float, str or list (then `item_type` is the
    items' type, str, int or float). `choices` enumerates the strings a str option (or a list's
    items) may be; `minimum`/`maximum` bound a number (or a list's numbers); `pattern` is a
    regex a string must match in full, `pattern_help` says it in words ("MAJOR.MINOR")."""

    type: Any
    default: Any
    help: str
    item_type: Any = None
    choices: tuple[str, ...] = ()
    minimum: Optional[float] = None
    maximum: Optional[float] = None
    pattern: Optional[str] = None
    pattern_help: str = ""

    def __post_init__(self) -> None:
        # A rule declaring an impossible option fails at import, not on a user's config.
        if self.type not in _TYPES:
            raise TypeError(f"Option: type must be one of bool, int, float, str, list, not {self.type!r}")
        if (self.type is list) != (self.item_type is not None) or self.item_type in (bool, list):
            raise TypeError("Option: a list option names its item_type (str, int or float); other options do not")
        if self.choices and self.scalar_type is not str:
            raise TypeError("Option: choices are strings, for a str option or a list of str")
        if self.pattern is not None and not self.pattern_help:
            raise TypeError("Option: a pattern needs its pattern_help, which the error message shows")
        problem = self.problem(self.default)
        if problem is not None:
            raise TypeError(f"Option: the default {self.default!r} {problem}")

    @property
    def scalar_type(self) -> Any:
        """The type of the value, or of each item of a list."""
        return self.item_type if self.type is list else self.type

    def expected(self) -> str:
        """What a valid value is, in words: `a list of strings, each one of "a", "b"`."""
        if self.type is list:
            return f"a list of {_plural(self.item_type)}{self._constraint(', each ')}"
        return f"{_singular(self.type)}{self._constraint(' ')}"

    def _constraint(self, lead: str) -> str:
        if self.choices:
            import json  # messages only: a run with valid options never needs it

            return lead + "one of " + ", ".join(json.dumps(c) for c in self.choices)
        if self.pattern is not None:
            return lead + self.pattern_help
        if self.minimum is not None and self.maximum is not None:
            return f"{lead}from {self.minimum:g} to {self.maximum:g}"
        if self.minimum is not None:
            return f"{lead}at least {self.minimum:g}"
        if self.maximum is not None:
            return f"{lead}at most {self.maximum:g}"
        return ""

    def problem(self, value: Any) -> Optional[str]:
        """None when `value` is valid; else `must be <what>, got <value>`, for the message
        that names the key."""
        if self.type is list:
            ok = isinstance(value, list) and all(self._scalar_ok(v) for v in value)
        else:
            ok = self._scalar_ok(value)
        return None if ok else f"must be {self.expected()}, got {_toml(value)}"

    def _scalar_ok(self, value: Any) -> bool:
        kind = self.scalar_type
        if kind is bool or isinstance(value, bool):
            return kind is bool and isinstance(value, bool)
        if kind is str:
            return isinstance(value, str) and (not self.choices or value in self.choices) and (
                self.pattern is None or re.fullmatch(self.pattern, value) is not None)
        if not isinstance(value, (int, float)) or (kind is int and not isinstance(value, int)):
            return False
        return math.isfinite(value) and (self.minimum is None or value >= self.minimum) and (
            self.maximum is None or value <= self.maximum)

    def json_schema(self) -> dict[str, Any]:
        """The option's JSON schema, as torchlint/data/schema.json shows it."""
        out: dict[str, Any] = {"description": self.help, "type": _JSON_TYPES[self.type]}
        scalar = self._scalar_schema()
        if self.type is list:
            out["items"] = scalar
        else:
            out.update((k, v) for k, v in scalar.items() if k != "type")
        out["default"] = self.default
        return out

    def _scalar_schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": _JSON_TYPES[self.scalar_type]}
        if self.choices:
            out["enum"] = list(self.choices)
        if self.pattern is not None:
            out["pattern"] = f"^(?:{self.pattern})$"
        if self.minimum is not None:
            out["minimum"] = self.minimum
        if self.maximum is not None:
            out["maximum"] = self.maximum
        return out

    def doc_line(self, key: str) -> str:
        """The rule doc's Options entry: `- `key` (a list of strings; default: []): help`."""
        return f"- `{key}` ({self.expected()}; default: `{_toml(self.default)}`): {self.help}"


def _singular(kind: Any) -> str:
    return {bool: "true or false", int: "an integer", float: "a number", str: "a string"}[kind]


def _plural(kind: Any) -> str:
    return {int: "integers", float: "numbers", str: "strings"}[kind]


def _toml(value: Any) -> str:
    """A value as TOML writes it (true, "x", ["a"]), so the message quotes what the user wrote."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        import json

        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "a table"
    return repr(value)
