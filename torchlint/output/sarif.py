"""SARIF 2.1.0 for GitHub code scanning and editors."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from urllib.parse import quote
from typing import Any, Optional

from torchlint.diagnostics import Finding
from torchlint.docs import full_description, help_text
from torchlint.output.docs_url import INFORMATION_URI, rule_url, version
from torchlint.rules.registry import RULES_BY_CODE

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
FINGERPRINT_KEY = "torchlint/v1"


def _rule_descriptor(code: str) -> dict[str, Any]:
    rule = RULES_BY_CODE[code]
    text, markdown = help_text(rule)
    properties: dict[str, Any] = {
        "tags": list(rule.tags) or ["correctness"],
        "precision": rule.precision,
        "problem.severity": {"error": "error", "warning": "warning", "info": "recommendation"}[rule.severity],
    }
    if rule.security_severity is not None:
        properties["security-severity"] = f"{rule.security_severity:.1f}"
        properties["tags"] = [*properties["tags"], "security"] if "security" not in properties["tags"] else properties["tags"]
    return {
        "id": code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": full_description(rule)},
        "help": {"text": text, "markdown": markdown},
        "helpUri": rule_url(code, rule.name),
        "defaultConfiguration": {"level": _LEVEL[rule.severity]},
        "properties": properties,
    }


def _fingerprint(f: Finding, line_text: str, occurrence: int) -> str:
    # Stable across unrelated edits: rule, file, the flagged line's text (not its number).
    key = f"{f.code}\0{f.path}\0{line_text.strip()}\0{occurrence}"
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def render(findings: list[Finding], sources: Optional[dict] = None, *,
           errors: Optional[list[Finding]] = None, cwd: Optional[Path] = None, **_: object) -> str:
    sources = sources or {}
    cwd = (cwd or Path.cwd()).resolve()
    codes = sorted({f.code for f in findings})
    index = {code: i for i, code in enumerate(codes)}
    seen: dict[tuple[str, str, str], int] = {}
    results = []
    for f in findings:
        source = sources.get(f.path)
        line_text = source.line(f.row) if source is not None else ""
        k = (f.code, f.path, line_text.strip())
        seen[k] = seen.get(k, 0) + 1
        result: dict[str, Any] = {
            "ruleId": f.code,
            "ruleIndex": index[f.code],
            "level": _LEVEL.get(f.severity, "warning"),
            "message": {"text": f.message},
            "locations": [_location(f, cwd)],
            "partialFingerprints": {FINGERPRINT_KEY: _fingerprint(f, line_text, seen[k])},
        }
        if f.verify:
            result["properties"] = {"verify": f.verify}
        results.append(result)
    notifications = [{
        "level": "error",
        "message": {"text": f"{e.path}:{e.row}:{e.col}: {e.message}"},
        "locations": [_location(e, cwd)],
        "descriptor": {"id": e.code},
    } for e in (errors or [])]
    run: dict[str, Any] = {
        "tool": {"driver": {
            "name": "torchlint",
            "version": version(),
            "semanticVersion": version(),
            "informationUri": INFORMATION_URI,
            "rules": [_rule_descriptor(code) for code in codes],
        }},
        "originalUriBaseIds": {"%SRCROOT%": {"uri": cwd.as_uri() + "/"}},
        "columnKind": "unicodeCodePoints",
        "results": results,
        "invocations": [{
            "executionSuccessful": True,
            "toolExecutionNotifications": notifications,
        }],
    }
    return json.dumps({"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}, indent=2) + "\n"


def _location(f: Finding, cwd: Path) -> dict[str, Any]:
    path = Path(f.path)
    absolute = path if path.is_absolute() else (cwd / path)
    try:
        uri = absolute.resolve().relative_to(cwd).as_posix()
        artifact: dict[str, Any] = {"uri": quote(uri), "uriBaseId": "%SRCROOT%"}
    except ValueError:
        artifact = {"uri": absolute.resolve().as_uri()}
    return {"physicalLocation": {
        "artifactLocation": artifact,
        "region": {"startLine": f.row, "startColumn": f.col, "endLine": f.end_row, "endColumn": f.end_col},
    }}


