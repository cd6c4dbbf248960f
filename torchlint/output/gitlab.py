"""GitLab Code Quality report (`artifacts:reports:codequality`): a JSON array of issues with
`description`, `check_name`, `fingerprint`, `severity` and `location.path` +
`location.lines.begin`, as GitLab documents and ruff writes it.

Paths are relative to the repository root (GitLab links them against the project). The
fingerprint hashes the path, code and message, not the line, so an issue keeps its identity
when code above it moves; identical issues in one file are numbered apart."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

from torchlint.diagnostics import Finding
from torchlint.output.locations import cell_note, root_path
from torchlint.safe_io import printable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional

# GitLab's levels: info, minor, major, critical, blocker.
_SEVERITY = {"error": "major", "warning": "minor", "info": "info"}


def _fingerprint(path: str, f: Finding, occurrence: int) -> str:
    key = "\0".join((path, f.code, f.message, str(f.cell or ""), str(occurrence)))
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def render(findings: list[Finding], sources: Any = None, *, cwd: Optional[Path] = None,
           root: Optional[Path] = None, **_: object) -> str:
    seen: Counter[tuple[str, str, str, Optional[int]]] = Counter()
    issues = []
    for f in findings:
        path = root_path(f, cwd, root)
        key = (path, f.code, f.message, f.cell)
        seen[key] += 1
        issues.append({
            "check_name": f.code,
            "description": printable(f"{cell_note(f)}{f.message}"),
            "fingerprint": _fingerprint(path, f, seen[key]),
            "severity": _SEVERITY.get(f.severity, "minor"),
            "location": {"path": path, "lines": {"begin": f.row, "end": f.end_row}},
        })
    return json.dumps(issues, indent=2) + "\n"
