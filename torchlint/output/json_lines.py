"""JSON Lines: the `json` format's objects, one per line, compact (ruff's `json-lines`),
for tools that stream findings."""

from __future__ import annotations

import json

from torchlint.diagnostics import Finding
from torchlint.output.json_format import finding_dict

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def render(findings: list[Finding], sources: Any = None, **_: object) -> str:
    return "".join(json.dumps(finding_dict(f), separators=(",", ":")) + "\n" for f in findings)
