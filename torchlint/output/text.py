"""ruff-like text output: `full` (with a code frame) and `concise` (one line each)."""

from __future__ import annotations

from typing import Optional

from torchlint.diagnostics import Finding
from torchlint.safe_io import printable
from torchlint.source import SourceFile


def _verify_line(f: Finding) -> Optional[str]:
    v = f.verify
    if not v:
        return None
    parts = []
    for run in v.get("runs", []):
        evidence = f": {run['evidence']}" if run.get("evidence") else ""
        parts.append(f"{run['verdict']} on torch {run.get('torch') or '?'} ({run['device']}){evidence}")
    return "verified: " + "; ".join(parts) if parts else None


def _frame(f: Finding, source: Optional[SourceFile]) -> list[str]:
    if source is None:
        return []
    line = source.line(f.row)
    if not line and f.code == "TL000":
        return []
    gutter = len(str(f.row))
    pad = " " * gutter
    width = (f.end_col - f.col) if f.end_row == f.row else len(line) - f.col + 1
    width = max(1, min(width, max(1, len(line) - f.col + 1)))
    # Escaped: a source line may carry terminal escape sequences (erase line, OSC 52).
    shown = line.expandtabs(1)
    caret = " " * len(printable(shown[:f.col - 1])) + "^" * len(printable(shown[f.col - 1:f.col - 1 + width]) or " ")
    return [f"{pad} |", f"{f.row} | {printable(shown)}", f"{pad} | {caret}"]


def summary(findings: list[Finding]) -> str:
    if not findings:
        return "All checks passed!"
    n = len(findings)
    return f"Found {n} finding{'s' if n != 1 else ''}."


def render_full(findings: list[Finding], sources: dict[str, SourceFile], *, quiet: bool = False,
                **_: object) -> str:
    out: list[str] = []
    for f in findings:
        out.append(f"{f.path}:{f.row}:{f.col}: {f.code} {printable(f.message)}")
        out.extend(_frame(f, sources.get(f.path)))
        out.append(f"  help: run `torchlint rule {f.code}` for details and fixes")
        verified = _verify_line(f)
        if verified:
            out.append(f"  {verified}")
        out.append("")
    if quiet:  # findings only, like ruff -q
        return "\n".join(out) + "\n" if out else ""
    out.append(summary(findings))
    return "\n".join(out) + "\n"


def render_concise(findings: list[Finding], sources: dict[str, SourceFile], *, quiet: bool = False,
                   **_: object) -> str:
    out = [f"{f.path}:{f.row}:{f.col}: {f.code} {printable(f.message)}" + (
        f" [{_verify_line(f)}]" if f.verify else "") for f in findings]
    if not quiet:
        out.append(summary(findings))
    if not out:
        return ""
    return "\n".join(out) + "\n"
