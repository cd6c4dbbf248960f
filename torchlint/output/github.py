"""GitHub Actions workflow commands: `::error file=...,line=...::message`."""

from __future__ import annotations

from typing import Any

from torchlint.diagnostics import Finding
from torchlint.safe_io import printable

_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def _escape_data(text: str) -> str:
    text = printable(text)  # no control characters reach the runner's log (they end a command)
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render(findings: list[Finding], sources: Any = None, **_: object) -> str:
    lines = []
    for f in findings:
        props = (f"file={_escape_property(f.path)},line={f.row},col={f.col},"
                 f"endLine={f.end_row},endColumn={f.end_col},"
                 f"title={_escape_property(f'torchlint ({f.code})')}")
        lines.append(f"::{_LEVEL.get(f.severity, 'warning')} {props}::{_escape_data(f'{f.code} {f.message}')}")
    return "\n".join(lines) + ("\n" if lines else "")
