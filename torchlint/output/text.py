"""ruff-like text output: `full` (with a code frame) and `concise` (one line each)."""

from __future__ import annotations


from torchlint.diagnostics import Finding
from torchlint.output.color import PLAIN, Palette
from torchlint.records import YOUR_CODE
from torchlint.safe_io import printable
from torchlint.source import SourceFile

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional


def location(f: Finding) -> str:
    """`path:row:col`, or `nb.ipynb:cell 3:4:1` for a notebook cell (ruff's spelling)."""
    cell = getattr(f, "cell", None)
    where = f"cell {cell}:" if cell is not None else ""
    return f"{f.path}:{where}{f.row}:{f.col}"


def headline(f: Finding, palette: Palette = PLAIN) -> str:
    return f"{palette.path(printable(location(f)))}: {palette.code(f.code, f.severity)} {printable(f.message)}"


def verify_line(f: Finding) -> Optional[str]:
    """`verify: <verdict> on torch X (device) [where it came from]: evidence; ...`, control
    characters escaped (evidence can quote an exception raised by the user's code). A probe's
    verdict says that it is generic: it ran a demonstration, not the user's code."""
    v = f.verify
    if not v:
        return None
    parts = []
    for run in v.runs:
        evidence = f": {run.evidence}" if run.evidence else ""
        origin = " [generic probe, not your code]" if run.generic else \
            f" [your code: {', '.join(run.ran[:4])}]" if run.ran else " [your code]" if run.source == YOUR_CODE else ""
        parts.append(f"{run.verdict} on torch {run.torch or '?'} ({run.device}){origin}{evidence}")
    return printable("verify: " + "; ".join(parts)) if parts else None


def _runtime_line(f: Finding) -> Optional[str]:
    r = f.runtime
    if not r or r.evidence == f.message:  # a runtime check's message is its evidence
        return None
    return f"runtime: {r.verdict}: {printable(r.evidence)}"


def _frame(f: Finding, source: Optional[SourceFile], palette: Palette) -> list[str]:
    if source is None:
        return []
    line = finding_line(source, f)
    if not line and f.code == "TL000":
        return []
    gutter = len(str(f.row))
    pad = " " * gutter
    width = (f.end_col - f.col) if f.end_row == f.row else len(line) - f.col + 1
    width = max(1, min(width, max(1, len(line) - f.col + 1)))
    # Escaped: a source line may carry terminal escape sequences (erase line, OSC 52).
    shown = line.expandtabs(1)
    caret = " " * len(printable(shown[:f.col - 1])) + palette.caret(
        "^" * len(printable(shown[f.col - 1:f.col - 1 + width]) or " "))
    bar = palette.gutter(f"{pad} |")
    return [bar, palette.gutter(f"{f.row} |") + f" {printable(shown)}", f"{bar} {caret}"]


def finding_line(source: SourceFile, f: Finding) -> str:
    """The source line a finding points at (a notebook's rows count within the cell)."""
    cell = getattr(f, "cell", None)
    if cell is not None:
        cell_line = getattr(source, "cell_line", None)
        return cell_line(cell, f.row) if cell_line is not None else ""
    return source.line(f.row)


def summary(findings: list[Finding]) -> str:
    if not findings:
        return "All checks passed!"
    n = len(findings)
    return f"Found {n} finding{'s' if n != 1 else ''}."


def render_full(findings: list[Finding], sources: dict[str, SourceFile], *, quiet: bool = False,
                palette: Palette = PLAIN, **_: object) -> str:
    out: list[str] = []
    for f in findings:
        out.append(headline(f, palette))
        out.extend(_frame(f, sources.get(f.path), palette))
        if f.help:
            out.append(f"  {palette.help('help:')} {printable(f.help)}")
        out.append(f"  note: `torchlint rule {f.code}` explains why")
        verified = verify_line(f)
        if verified:
            out.append(f"  {verified}")
        observed = _runtime_line(f)
        if observed:
            out.append(f"  {observed}")
        out.append("")
    if quiet:  # findings only, like ruff -q
        return "\n".join(out) + "\n" if out else ""
    out.append(palette.summary(summary(findings), clean=not findings))
    return "\n".join(out) + "\n"


def render_concise(findings: list[Finding], sources: dict[str, SourceFile], *, quiet: bool = False,
                   palette: Palette = PLAIN, **_: object) -> str:
    out = [headline(f, palette) + (f" [{verify_line(f)}]" if f.verify else "") + (
        f" [{_runtime_line(f)}]" if _runtime_line(f) else "") for f in findings]
    if not quiet:
        out.append(palette.summary(summary(findings), clean=not findings))
    if not out:
        return ""
    return "\n".join(out) + "\n"
