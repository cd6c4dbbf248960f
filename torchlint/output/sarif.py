"""SARIF 2.1.0 for GitHub code scanning and editors.

What GitHub needs, and why this renderer does it:
- URIs relative to the repository root (`%SRCROOT%`), whatever directory torchlint ran in;
  `invocations[0].workingDirectory` records that directory.
- Single-line regions: GitHub shows an alert on a pull request only when its region lies
  in the diff, so the primary location is the flagged line and a multi-line span goes to
  `relatedLocations`.
- Every enabled rule in `tool.driver.rules`, so alerts of a rule that stopped firing close.
- At most 25,000 results per run (GitHub rejects more); the rest are dropped with a
  notification.
- Plain text in `text` fields (GitHub does not render Markdown there); `message.markdown`
  is rebuilt by output/markdown.py, so quoted source cannot inject links or HTML."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from urllib.parse import quote

from torchlint.diagnostics import Finding
from torchlint.docs import full_description, help_text, plain_text
from torchlint.output.docs_url import INFORMATION_URI, rule_url, version
from torchlint.output.markdown import safe_markdown
from torchlint.output.text import finding_line
from torchlint.project_root import relative_to_root
from torchlint.rules import lazy

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Iterable, Optional

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
FINGERPRINT_KEY = "torchlint/v1"
MAX_RESULTS = 25_000  # GitHub code scanning's limit per run
SRCROOT = "%SRCROOT%"


def _described(code: str) -> Any:
    """A rule's metadata from the index (a report on one file imports no rule it did not
    wake); a runtime check's (only `torchlint run` reports them) from the catalog."""
    rule = lazy.by_code().get(code)
    if rule is not None:
        return rule
    from torchlint import catalog

    return catalog.by_code()[code]


def _rule_descriptor(code: str) -> dict[str, Any]:
    rule = _described(code)
    text, markdown = help_text(rule)
    tags = list(rule.tags) or ["correctness"]
    properties: dict[str, Any] = {
        "tags": tags,
        "precision": rule.precision,
        "problem.severity": {"error": "error", "warning": "warning", "info": "recommendation"}[rule.severity],
    }
    if rule.security_severity is not None:
        properties["security-severity"] = f"{rule.security_severity:.1f}"
        if "security" not in tags:
            properties["tags"] = [*tags, "security"]
    return {
        "id": code,
        "name": rule.name,
        "shortDescription": {"text": plain_text(rule.summary)},
        "fullDescription": {"text": full_description(rule)},
        "help": {"text": text, "markdown": markdown},
        "helpUri": rule_url(code, rule.name),
        "defaultConfiguration": {"level": _LEVEL[rule.severity]},
        "properties": properties,
    }


def _fingerprint(f: Finding, line_text: str, occurrence: int) -> str:
    # Stable across unrelated edits: rule, file, the flagged line's text (not its number,
    # nor a notebook cell's number, which changes when a cell is inserted above).
    key = f"{f.code}\0{f.path}\0{line_text.strip()}\0{occurrence}"
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def _message(f: Finding) -> dict[str, Any]:
    help_line = getattr(f, "help", None)  # a short "what to do" line, where rules give one
    text = plain_text(f.message)
    raw = f.message
    markdown = safe_markdown(f.message)  # the message quotes user source: never raw Markdown
    if help_line:
        text += "\n" + plain_text(help_line)
        raw += "\n" + help_line
        markdown += "\n\n" + safe_markdown(help_line)
    message: dict[str, Any] = {"text": text}
    if raw != text:  # code spans or emphasis to show
        message["markdown"] = markdown
    return message


def _line_of(sources: Any, f: Finding) -> str:
    source = sources.get(f.path)
    return finding_line(source, f) if source is not None else ""


def render(findings: list[Finding], sources: Optional[dict] = None, *,
           errors: Optional[list[Finding]] = None, cwd: Optional[Path] = None, root: Optional[Path] = None,
           rules: Iterable[str] = (), **_: object) -> str:
    sources = {} if sources is None else sources  # a lazy Sources starts empty: keep it
    cwd = (cwd or Path.cwd()).resolve()
    root = (root or cwd).resolve()
    over_limit = truncation_warning(len(findings))
    kept = findings[:MAX_RESULTS]
    codes = sorted({*rules, *(f.code for f in findings), *(e.code for e in errors or [])}
                   & (lazy.static_codes() | lazy.runtime_codes()))
    index = {code: i for i, code in enumerate(codes)}
    seen: dict[tuple[str, str, str], int] = {}
    results = []
    for f in kept:
        line_text = _line_of(sources, f)
        k = (f.code, f.path, line_text.strip())
        seen[k] = seen.get(k, 0) + 1
        physical, related = _locations(f, cwd, root, line_text, _notebook_lines(sources, f))
        result: dict[str, Any] = {
            "ruleId": f.code,
            "ruleIndex": index[f.code],
            "level": _LEVEL.get(f.severity, "warning"),
            "message": _message(f),
            "locations": [physical],
            "partialFingerprints": {FINGERPRINT_KEY: _fingerprint(f, line_text, seen[k])},
        }
        if related:
            result["relatedLocations"] = related
        if f.fix and f.cell is None:  # a fix's edits count a cell's rows, not the file's
            result["fixes"] = [_fix(f, cwd, root)]
        properties: dict[str, Any] = {}
        if f.cell is not None:  # where in the notebook: the region holds the .ipynb file's lines
            properties.update(cell=f.cell, cellLine=f.row, cellColumn=f.col)
        if f.verify:
            properties["verify"] = f.verify.to_json()
        if f.runtime:  # `torchlint run`
            properties["runtime"] = f.runtime.to_json()
        if properties:
            result["properties"] = properties
        results.append(result)
    notifications: list[dict[str, Any]] = [{
        "level": "error",
        "message": {"text": f"{e.path}:{e.row}:{e.col}: {plain_text(e.message)}"},
        "locations": [_locations(e, cwd, root, "")[0]],
        "descriptor": {"id": e.code},
    } for e in (errors or [])]
    if over_limit:
        notifications.append({"level": "warning", "message": {"text": over_limit}})
    run: dict[str, Any] = {
        "tool": {"driver": {
            "name": "torchlint",
            "version": version(),
            "semanticVersion": version(),
            "informationUri": INFORMATION_URI,
            "rules": [_rule_descriptor(code) for code in codes],
        }},
        "originalUriBaseIds": {SRCROOT: {"uri": root.as_uri() + "/"}},
        "columnKind": "unicodeCodePoints",
        "results": results,
        "invocations": [{
            "executionSuccessful": True,
            "workingDirectory": {"uri": cwd.as_uri() + "/"},
            "toolExecutionNotifications": notifications,
        }],
    }
    return json.dumps({"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}, indent=2) + "\n"


def _fix(f: Finding, cwd: Path, root: Path) -> dict[str, Any]:
    """A SARIF `fix`: the finding's edits as replacements in its file (an insertion is an
    empty deleted region)."""
    assert f.fix is not None
    return {
        "description": {"text": f.fix.message + ("" if f.fix.safe else " (unsafe)")},
        "artifactChanges": [{
            "artifactLocation": _artifact(f.path, cwd, root),
            "replacements": [{
                "deletedRegion": {"startLine": e.start[0], "startColumn": e.start[1],
                                  "endLine": e.end[0], "endColumn": e.end[1]},
                "insertedContent": {"text": e.content},
            } for e in f.fix.edits],
        }],
    }


def truncation_warning(total: int) -> Optional[str]:
    """What to tell the user when `total` findings exceed what GitHub accepts, else None."""
    if total <= MAX_RESULTS:
        return None
    return (f"{total} findings exceed GitHub code scanning's limit of {MAX_RESULTS} results per run; "
            f"only the first {MAX_RESULTS} are in the SARIF file. Narrow the run with --select or paths.")


def _artifact(path: str, cwd: Path, root: Path) -> dict[str, Any]:
    relative = relative_to_root(path, root, cwd)
    if relative is not None:
        return {"uri": quote(relative), "uriBaseId": SRCROOT}
    absolute = Path(path) if Path(path).is_absolute() else cwd / path
    return {"uri": absolute.resolve().as_uri()}


def _notebook_lines(sources: Any, f: Finding) -> Optional[tuple[int, int]]:
    """For a notebook finding, the .ipynb file lines of its first and last rows (a cell's
    rows are not the file's lines), or None when they cannot be told."""
    source = sources.get(f.path)
    file_line = getattr(source, "file_line", None)
    if f.cell is None or file_line is None:
        return None
    start, end = file_line(f.cell, f.row), file_line(f.cell, f.end_row)
    return (start, end or start) if start is not None else None


def _locations(f: Finding, cwd: Path, root: Path, line_text: str,
               notebook_lines: Optional[tuple[int, int]] = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The primary location (the flagged line only) and, for a span over several lines,
    a related location covering all of it. A notebook finding is placed on the lines of the
    .ipynb file that hold its code (no columns: the JSON line is indented and quoted), or,
    where they cannot be told, on the file alone."""
    artifact = _artifact(f.path, cwd, root)
    if f.cell is not None:
        if notebook_lines is None:
            return {"physicalLocation": {"artifactLocation": artifact}}, []
        start, end = notebook_lines
        primary = {"physicalLocation": {"artifactLocation": artifact, "region": {"startLine": start, "endLine": start}}}
        if end == start:
            return primary, []
        return primary, [{"id": 1, "message": {"text": "the whole flagged code"}, "physicalLocation": {
            "artifactLocation": artifact, "region": {"startLine": start, "endLine": end}}}]
    if f.end_row == f.row:
        end_col = f.end_col
    else:  # stop at the end of the first line (the line text may be unknown: at least one column)
        end_col = max(f.col + 1, len(line_text) + 1)
    primary = {"physicalLocation": {
        "artifactLocation": artifact,
        "region": {"startLine": f.row, "startColumn": f.col, "endLine": f.row, "endColumn": end_col},
    }}
    if f.end_row == f.row:
        return primary, []
    related = {"id": 1, "message": {"text": "the whole flagged code"}, "physicalLocation": {
        "artifactLocation": artifact,
        "region": {"startLine": f.row, "startColumn": f.col, "endLine": f.end_row, "endColumn": f.end_col},
    }}
    return primary, [related]
