"""ruff's `grouped` format: findings under their file's name, `row:col CODE message`,
rows and columns aligned within a file, then the summary line."""

from __future__ import annotations

from itertools import groupby

from torchlint.diagnostics import Finding
from torchlint.output.color import PLAIN, Palette
from torchlint.output.text import summary, verify_line
from torchlint.safe_io import printable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def _where(f: Finding) -> tuple[str, str]:
    row = f"cell {f.cell}:{f.row}" if f.cell is not None else str(f.row)
    return row, str(f.col)


def render(findings: list[Finding], sources: Any = None, *, quiet: bool = False,
           palette: Palette = PLAIN, **_: object) -> str:
    out: list[str] = []
    for path, group in groupby(findings, key=lambda f: f.path):
        items = list(group)
        places = [_where(f) for f in items]
        row_width = max(len(r) for r, _ in places)
        col_width = max(len(c) for _, c in places)
        out.append(palette.path(printable(path)) + ":")
        for f, (row, col) in zip(items, places):
            line = f"  {row:>{row_width}}:{col:<{col_width}} {palette.code(f.code, f.severity)} {printable(f.message)}"
            verified = verify_line(f)
            out.append(line + (f" [{verified}]" if verified else ""))
        out.append("")
    if not quiet:
        out.append(palette.summary(summary(findings), clean=not findings))
    return "\n".join(out) + "\n" if out else ""
