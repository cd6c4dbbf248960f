"""GitHub Actions workflow commands: `::error file=...,line=...::message`.

The runner resolves `file=` against the checkout root (GITHUB_WORKSPACE), so paths are
written relative to the repository root, not to the directory torchlint ran in."""

from __future__ import annotations

from pathlib import Path

from torchlint.diagnostics import Finding
from torchlint.output.ci_safe import LEGACY_COMMAND
from torchlint.output.text import verify_line
from torchlint.safe_io import printable
from torchlint.project_root import relative_to_root

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional

_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def _escape_data(text: str) -> str:
    text = printable(text)  # no control characters reach the runner's log (they end a command)
    # `##[...]` / `##vso[...]` anywhere in a line is a command to the legacy runner and to an
    # Azure agent that reads this output: its second `#` is written escaped, as ci_safe does.
    text = LEGACY_COMMAND.sub(lambda m: "\\u0023", text)
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render(findings: list[Finding], sources: Any = None, *, cwd: Optional[Path] = None,
           root: Optional[Path] = None, **_: object) -> str:
    cwd = (cwd or Path.cwd()).resolve()
    root = (root or cwd).resolve()
    lines = []
    for f in findings:
        path = relative_to_root(f.path, root, cwd) or str((cwd / f.path).resolve())
        message = f"{f.code} {f.message}"
        cell = getattr(f, "cell", None)
        if cell is not None:
            # A line in a notebook cell is not a line of the .ipynb file: annotate the file's
            # line that holds the code (when it can be told) and say where in the message.
            props = f"file={_escape_property(path)}"
            # (`sources` loads on first use: an empty one is not "no sources")
            file_line = getattr(sources.get(f.path), "file_line", None) if sources is not None else None
            line = file_line(cell, f.row) if file_line is not None else None
            if line is not None:
                props += f",line={line}"
            message = f"{f.code} cell {cell}, line {f.row}: {f.message}"
        elif f.end_row == f.row:
            props = (f"file={_escape_property(path)},line={f.row},col={f.col},"
                     f"endLine={f.end_row},endColumn={f.end_col}")
        else:
            # The flagged line only (as in SARIF): a pull-request annotation shows when that
            # line is in the diff, not only when the whole span is.
            props = f"file={_escape_property(path)},line={f.row},col={f.col}"
        if f.verify:  # the verdict kind and its evidence, as in the text formats
            message += f" [{verify_line(f)}]"
        if f.runtime and f.runtime.evidence != f.message:  # `torchlint run`
            message += f" [runtime: {f.runtime.verdict}: {f.runtime.evidence}]"
        text = _escape_data(message)
        help_line = getattr(f, "help", None)
        if help_line:
            text += "%0A" + _escape_data(f"help: {help_line}")  # a second line in the annotation
        props += f",title={_escape_property(f'torchlint ({f.code})')}"
        lines.append(f"::{_LEVEL.get(f.severity, 'warning')} {props}::{text}")
    return "\n".join(lines) + ("\n" if lines else "")
