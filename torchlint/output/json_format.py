"""JSON output shaped like ruff's, so tooling that reads ruff's json can read ours."""

from __future__ import annotations

import json
import os

from torchlint.diagnostics import Finding
from torchlint.output.docs_url import rule_url

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def finding_dict(f: Finding) -> dict[str, Any]:
    out = {
        "cell": getattr(f, "cell", None),  # 1-based code-cell number in a notebook, like ruff
        "code": f.code,
        "name": f.name,
        "message": f.message,
        "help": f.help,
        "severity": f.severity,
        "filename": os.path.abspath(f.path),
        "location": {"row": f.row, "column": f.col},
        "end_location": {"row": f.end_row, "column": f.end_col},
        "url": rule_url(f.code, f.name),
        "fix": f.fix.to_json() if f.fix else None,
        "noqa_row": f.row,
        "verify": f.verify.to_json() if f.verify else None,
    }
    if f.runtime is not None:  # `torchlint run` only
        out["runtime"] = f.runtime.to_json()
    return out


def render(findings: list[Finding], sources: Any = None, **_: object) -> str:
    return json.dumps([finding_dict(f) for f in findings], indent=2) + "\n"
