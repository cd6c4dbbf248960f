"""The typed parts of a finding that travel: its fix (text edits, in the shape of ruff's JSON
`fix`) and what `torchlint run` saw at it. Frozen, so a record is built once and never
reshaped; `to_json` is what the cache and every output write, `from_json` what the cache
reads back (a bad shape raises RecordError, so nothing downstream defends against one)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

SAFE, UNSAFE = "safe", "unsafe"
APPLICABILITIES = (SAFE, UNSAFE)


class RecordError(ValueError):
    """JSON that does not have a record's shape (a damaged or foreign cache entry)."""


def _field(data: Any, key: str, kind: type) -> Any:
    value = data.get(key) if type(data) is dict else None
    if type(value) is not kind:
        raise RecordError(f"`{key}` must be a {kind.__name__}")
    return value


def _position(data: Any, key: str) -> tuple[int, int]:
    location = _field(data, key, dict)
    row, column = _field(location, "row", int), _field(location, "column", int)
    if row < 1 or column < 1:
        raise RecordError(f"`{key}` must be 1-based")
    return row, column


@dataclass(frozen=True)
class Edit:
    """Replace the text from `start` to `end` with `content`: 1-based (row, code-point
    column) positions, `end` exclusive (an insertion has start == end)."""

    start: tuple[int, int]
    end: tuple[int, int]
    content: str

    def to_json(self) -> dict[str, Any]:
        return {"content": self.content, "location": {"row": self.start[0], "column": self.start[1]},
                "end_location": {"row": self.end[0], "column": self.end[1]}}

    @classmethod
    def from_json(cls, data: Any) -> "Edit":
        start, end = _position(data, "location"), _position(data, "end_location")
        if end < start:
            raise RecordError("an edit must not end before it starts")
        return cls(start, end, _field(data, "content", str))


@dataclass(frozen=True)
class Fix:
    message: str  # what the fix does, one short sentence (ruff's fix title)
    edits: tuple[Edit, ...]
    applicability: str = SAFE  # "safe": --fix applies it; "unsafe": only with --unsafe-fixes

    def __post_init__(self) -> None:
        assert self.applicability in APPLICABILITIES, self.applicability

    @property
    def safe(self) -> bool:
        return self.applicability == SAFE

    def to_json(self) -> dict[str, Any]:
        return {"applicability": self.applicability, "message": self.message,
                "edits": [e.to_json() for e in self.edits]}

    @classmethod
    def from_json(cls, data: Any) -> "Fix":
        applicability = _field(data, "applicability", str)
        if applicability not in APPLICABILITIES:
            raise RecordError(f"unknown applicability {applicability!r}")
        edits = _field(data, "edits", list)
        return cls(_field(data, "message", str), tuple(Edit.from_json(e) for e in edits), applicability)


RUNTIME_VERDICTS = ("confirmed", "not-observed", "not-reached", "not-monitored")


@dataclass(frozen=True)
class RuntimeResult:
    """What `torchlint run` saw at a finding's lines: the verdict, its evidence, and how
    many times the flagged code ran."""

    verdict: str  # one of RUNTIME_VERDICTS
    evidence: str
    hits: int = 0

    @property
    def confirmed(self) -> bool:
        return self.verdict == "confirmed"

    def noted(self, note: str) -> "RuntimeResult":
        """The same result, its evidence followed by `note` (why the run saw less)."""
        return replace(self, evidence=self.evidence + note)

    def to_json(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "evidence": self.evidence, "hits": self.hits}

    @classmethod
    def from_json(cls, data: Any) -> "RuntimeResult":
        verdict = _field(data, "verdict", str)
        if verdict not in RUNTIME_VERDICTS:
            raise RecordError(f"unknown runtime verdict {verdict!r}")
        return cls(verdict, _field(data, "evidence", str), _field(data, "hits", int))
