"""Azure Pipelines logging commands:
`##vso[task.logissue type=error;sourcepath=...;linenumber=...;columnnumber=...;code=...;]message`
(ruff's `azure` format). Values are escaped as the agent unescapes them (`%` -> `%AZP25`,
CR/LF -> `%0D`/`%0A`, and in properties `;` -> `%3B`, `]` -> `%5D`), so a message cannot end
the command or start another; other control characters are escaped before that. Paths are
relative to the repository root, as the agent resolves them against the sources directory."""

from __future__ import annotations

from pathlib import Path

from torchlint.diagnostics import Finding
from torchlint.output.locations import cell_note, root_path
from torchlint.safe_io import printable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional

# Azure has no "info" issue: it would be dropped, so it is a warning.
_TYPE = {"error": "error", "warning": "warning", "info": "warning"}


def escape_data(text: str) -> str:
    return printable(text).replace("%", "%AZP25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace("]", "%5D").replace(";", "%3B")


def render(findings: list[Finding], sources: Any = None, *, cwd: Optional[Path] = None,
           root: Optional[Path] = None, **_: object) -> str:
    lines = []
    for f in findings:
        props = [f"type={_TYPE.get(f.severity, 'warning')}", f"sourcepath={escape_property(root_path(f, cwd, root))}"]
        if f.cell is None:  # a cell's rows are not the .ipynb file's lines
            props += [f"linenumber={f.row}", f"columnnumber={f.col}"]
        props.append(f"code={escape_property(f.code)}")
        lines.append(f"##vso[task.logissue {';'.join(props)};]{escape_data(cell_note(f) + f.message)}")
    return "".join(line + "\n" for line in lines)
