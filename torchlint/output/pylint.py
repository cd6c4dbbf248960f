"""pylint's parseable format, as flake8's `pylint` formatter and ruff write it:
`path:line: [CODE] message`, one finding a line (what Jenkins' warnings plugin and editors'
error-format patterns read). A notebook finding's line counts within its cell, so the cell
is named in the message."""

from __future__ import annotations


from torchlint.diagnostics import Finding
from torchlint.output.locations import cell_note
from torchlint.safe_io import printable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def render(findings: list[Finding], sources: Any = None, **_: object) -> str:
    lines = [f"{printable(f.path)}:{f.row}: [{f.code}] {printable(cell_note(f) + f.message)}" for f in findings]
    return "".join(line + "\n" for line in lines)
