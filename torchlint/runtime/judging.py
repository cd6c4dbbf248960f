"""What the runtime judges beside the rules share: the run's `Observation` (every event the
monitors wrote, across the program's processes) and the small lookups judges make in it.

A static rule's judge is `(obs, path, rows, cwd) -> RuntimeResult` (its `evidence.runtime`); a
runtime check's judge is its `problems(obs, static, cwd)` classmethod. Pure data; no torch."""

from __future__ import annotations

from collections import defaultdict

from torchlint.fast_dataclass import dataclass, field
from torchlint.records import RuntimeResult
from torchlint.safe_io import display_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Iterable, Optional
    from pathlib import Path
    Event = dict[str, Any]
    Rows = tuple[int, int]
    StaticJudge = Callable[["Observation", str, Rows, Path], RuntimeResult]

CLASS_INDEX_LOSSES = ("cross_entropy", "nll_loss")


@dataclass
class Observation:
    """Everything the monitors saw in one run, across all processes."""

    events: list[Event]
    by_kind: dict[str, list[Event]] = field(default_factory=lambda: defaultdict(list))
    counts: dict[str, int] = field(default_factory=dict)
    files: set[str] = field(default_factory=set)
    processes: int = 0
    steps: int = 0
    budget_reached: bool = False
    internal_errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        last_counts: dict[int, Event] = {}
        for event in self.events:
            kind = str(event.get("kind"))
            self.by_kind[kind].append(event)
            if kind == "counts":
                last_counts[event["pid"]] = event
            elif kind == "process":
                self.processes += 1
            elif kind == "budget":
                self.budget_reached = True
            elif kind == "internal_error":
                self.internal_errors.append(f"{event.get('where')}: {event.get('error')}")
        for dump in last_counts.values():
            for key, n in dump["counts"].items():
                self.counts[key] = self.counts.get(key, 0) + n
            self.files.update(dump.get("files") or [])
            if dump.get("main"):
                self.files.add(dump["main"])
            self.steps = max(self.steps, dump.get("steps", 0))
        for kind_events in self.by_kind.values():
            for event in kind_events:
                site = event.get("site")
                if site:
                    self.files.add(site[0])

    def hits(self, kind: str, path: str, rows: Rows, fallback: int) -> int:
        counted = sum(self.counts.get(f"{kind}@{path}:{row}", 0) for row in range(rows[0], rows[1] + 1))
        return max(counted, fallback)


@dataclass
class RuntimeProblem:
    """A runtime check's finding before it is located in the source."""

    code: str
    site: Optional[list]
    message: str


def at(site: Optional[list], path: str, rows: Rows) -> bool:
    return site is not None and len(site) > 1 and site[0] == path and rows[0] <= site[1] <= rows[1]


def where(site: Optional[list], cwd: Path) -> str:
    return f"{display_path(site[0], cwd)}:{site[1]}" if site else "?"


def shape(desc: Optional[Event]) -> str:
    return str(tuple(desc["shape"])) if desc else "?"


def verdict(kind: str, evidence: str, hits: int) -> RuntimeResult:
    return RuntimeResult(kind, evidence, hits)


def not_reached(what: str) -> RuntimeResult:
    return RuntimeResult("not-reached", what, 0)


def calls_at(obs: Observation, kind: str, path: str, rows: Rows) -> tuple[list[Event], int]:
    """The recorded events of `kind` at the flagged lines, and how often they ran in all."""
    calls = [e for e in obs.by_kind[kind] if at(e["site"], path, rows)]
    return calls, obs.hits(kind, path, rows, len(calls))


def loss_calls(obs: Observation, path: str, rows: Rows, functions: Iterable[str]) -> list[Event]:
    """Loss calls at the flagged lines, else later calls in the same function (the label may be
    cast a line or two before the loss)."""
    calls = [e for e in obs.by_kind["loss"] if e["fn"] in functions]
    here = [e for e in calls if at(e["site"], path, rows) or at(e.get("module_site"), path, rows)]
    if here:
        return here
    return [e for e in calls if e["site"] and e["site"][0] == path and e["site"][3] <= rows[0] <= e["site"][4]
            and e["site"][1] > rows[0]]


def is_float(desc: Optional[Event]) -> bool:
    return desc is not None and "float" in desc["dtype"]


def site_key(site: Optional[list]) -> Optional[tuple]:
    """(file, line) of a site, the key findings and events are matched by."""
    return (site[0], site[1]) if site else None
