"""reviewdog's Diagnostic JSON (rdjson): `{"source", "severity", "diagnostics": [...]}`,
each diagnostic with `message`, `location.path` + `range` (lines from 1, columns in UTF-8
bytes from 1, end exclusive), `severity`, `code.value`/`code.url`, and the fix's edits as
`suggestions`; the shape ruff writes, with the severity names reviewdog's schema defines."""

from __future__ import annotations

import json

from torchlint.diagnostics import Finding
from torchlint.output.docs_url import INFORMATION_URI, rule_url
from torchlint.output.locations import byte_column, cell_note, source_line

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_SEVERITY = {"error": "ERROR", "warning": "WARNING", "info": "INFO"}


def _position(sources: Any, f: Finding, row: int, col: int) -> dict[str, int]:
    return {"line": row, "column": byte_column(source_line(sources, f, row), col)}


def _diagnostic(f: Finding, sources: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "message": cell_note(f) + f.message,
        "location": {"path": f.path, "range": {"start": _position(sources, f, f.row, f.col),
                                               "end": _position(sources, f, f.end_row, f.end_col)}},
        "severity": _SEVERITY.get(f.severity, "WARNING"),
        "code": {"value": f.code, "url": rule_url(f.code, f.name)},
    }
    # A notebook's rows are not the file's: suggestions there would edit the wrong lines.
    if f.fix and f.cell is None:
        out["suggestions"] = [{
            "range": {"start": _position(sources, f, *e.start), "end": _position(sources, f, *e.end)},
            "text": e.content,
        } for e in f.fix.edits]
    return out


def render(findings: list[Finding], sources: Any = None, **_: object) -> str:
    report = {
        "source": {"name": "torchlint", "url": INFORMATION_URI},
        "severity": "WARNING",
        "diagnostics": [_diagnostic(f, sources) for f in findings],
    }
    return json.dumps(report, indent=2) + "\n"
