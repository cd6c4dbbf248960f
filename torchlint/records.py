"""The typed parts of a finding that travel: its fix (text edits, in the shape of ruff's JSON
`fix`) and what `torchlint run` saw at it. Frozen, so a record is built once and never
reshaped; `to_json` is what the cache and every output write, `from_json` what the cache
reads back (a bad shape raises RecordError, so nothing downstream defends against one)."""

from __future__ import annotations


from torchlint.fast_dataclass import dataclass, replace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional

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
    """A finding's fix: its edits, and whether plain --fix applies it."""

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


VERIFY_VERDICTS = ("confirmed", "not-reproduced", "demonstrated", "not-applicable", "skipped", "error")
# Where a verdict's evidence came from: the user's own code ran ("your-code": a slice of the
# file, or the project's module imported in the sandbox), a generic demonstration of the
# hazard ran ("probe"), or nothing ran ("none": skipped, or failed before anything ran).
YOUR_CODE, PROBE, NOTHING = "your-code", "probe", "none"
VERDICT_SOURCES = (YOUR_CODE, PROBE, NOTHING)
# The order in which one run's verdict decides a finding's, several devices given.
_PRECEDENCE = ("confirmed", "demonstrated", "error", "not-reproduced", "not-applicable", "skipped")


def _strings(data: Any, key: str, most: int) -> tuple[str, ...]:
    items = _field(data, key, list)
    if len(items) > most or not all(type(x) is str and len(x) <= 200 for x in items):
        raise RecordError(f"`{key}` must be at most {most} short strings")
    return tuple(items)


@dataclass(frozen=True)
class Verdict:
    """One `--verify` run of a finding (one device): the verdict, its evidence, where the
    evidence came from (`source`), what of the user's code ran (`ran`: `file:line` of the
    statements, functions and classes; empty unless `source` is "your-code"), and the
    sandbox layers it ran under."""

    verdict: str  # one of VERIFY_VERDICTS
    evidence: str
    source: str = NOTHING  # one of VERDICT_SOURCES
    ran: tuple[str, ...] = ()
    device: str = "cpu"
    torch: str = ""
    sandbox: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        assert self.verdict in VERIFY_VERDICTS and self.source in VERDICT_SOURCES, (self.verdict, self.source)

    @property
    def generic(self) -> bool:
        """A demonstration of the hazard in general, not a run of the user's code."""
        return self.source == PROBE

    def on(self, device: str, torch: str) -> "Verdict":
        return replace(self, device=device, torch=torch)

    def to_json(self) -> dict[str, Any]:
        return {"device": self.device, "torch": self.torch, "verdict": self.verdict, "evidence": self.evidence,
                "source": self.source, "ran": list(self.ran), "sandbox": list(self.sandbox)}

    @classmethod
    def from_json(cls, data: Any) -> "Verdict":
        verdict, source = _field(data, "verdict", str), _field(data, "source", str)
        if verdict not in VERIFY_VERDICTS:
            raise RecordError(f"unknown verdict {verdict!r}")
        if source not in VERDICT_SOURCES:
            raise RecordError(f"unknown verdict source {source!r}")
        evidence = _field(data, "evidence", str)
        if len(evidence) > 1000:
            raise RecordError("`evidence` is too long")
        return cls(verdict, evidence, source, _strings(data, "ran", 16), _field(data, "device", str),
                   _field(data, "torch", str), _strings(data, "sandbox", 40))

    def __getitem__(self, key: str) -> Any:
        """The JSON view (`run["evidence"]`), as the report's readers index it."""
        return self.to_json()[key]


@dataclass(frozen=True)
class Verification:
    """What `--verify` said about a finding: one Verdict per device it ran on; the finding's
    verdict is the strongest of them."""

    runs: tuple[Verdict, ...]

    @property
    def deciding(self) -> Optional[Verdict]:
        for name in _PRECEDENCE:
            for run in self.runs:
                if run.verdict == name:
                    return run
        return None

    @property
    def verdict(self) -> str:
        run = self.deciding
        return run.verdict if run is not None else "skipped"

    @property
    def source(self) -> str:
        run = self.deciding
        return run.source if run is not None else NOTHING

    @property
    def verified(self) -> bool:
        """What `--verified-only` keeps: confirmed by a run of the user's own code."""
        return self.verdict == "confirmed" and self.source == YOUR_CODE

    def to_json(self) -> dict[str, Any]:
        return {"runs": [r.to_json() for r in self.runs], "verdict": self.verdict, "source": self.source}

    @classmethod
    def from_json(cls, data: Any) -> "Verification":
        return cls(tuple(Verdict.from_json(r) for r in _field(data, "runs", list)))

    def __getitem__(self, key: str) -> Any:
        """The JSON view (`verify["verdict"]`, `verify["runs"][0]["evidence"]`)."""
        return {"runs": list(self.runs), "verdict": self.verdict, "source": self.source}[key]
