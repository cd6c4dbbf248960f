"""Where a finding is, as the CI formats name it: a path relative to the repository root
(what GitLab, Azure and GitHub resolve against) and UTF-8 byte columns (reviewdog)."""

from __future__ import annotations

from pathlib import Path

from torchlint.diagnostics import Finding
from torchlint.project_root import relative_to_root

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional


def root_path(f: Finding, cwd: Optional[Path], root: Optional[Path]) -> str:
    """`f.path` relative to `root` (POSIX), or absolute when the file lies outside it."""
    cwd = (cwd or Path.cwd()).resolve()
    root = (root or cwd).resolve()
    return relative_to_root(f.path, root, cwd) or str((cwd / f.path).resolve())


def cell_note(f: Finding) -> str:
    """`cell 3, line 4: ` for a notebook finding, whose row counts within the cell; the
    formats below have no field for the cell."""
    return f"cell {f.cell}, line {f.row}: " if f.cell is not None else ""


def source_line(sources: Any, f: Finding, row: int) -> Optional[str]:
    """The text of `row` in `f`'s file (or cell), or None when the source is not at hand."""
    source = sources.get(f.path) if sources is not None else None
    if source is None:
        return None
    try:
        if f.cell is not None:
            cell_line = getattr(source, "cell_line", None)
            return cell_line(f.cell, row) if cell_line is not None else None
        return source.line(row)
    except (IndexError, KeyError, ValueError):
        return None


def byte_column(line: Optional[str], col: int) -> int:
    """A 1-based code-point column as a 1-based UTF-8 byte column."""
    if line is None:
        return col
    return len(line[:col - 1].encode("utf-8", "surrogatepass")) + 1
