"""Linting a set of files: per-file work, run in this process or in worker processes,
with results served from the cache when a file has not changed."""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from torchlint.checker import check_source, parse_source
from torchlint.diagnostics import Finding
from torchlint.rules.registry import RULES_BY_CODE, SYNTAX_ERROR


@dataclass(frozen=True)
class FileTask:
    path: str  # filesystem path ("-" for stdin)
    display: str  # path as shown in output
    codes: frozenset[str]
    options: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = ()
    data: Optional[bytes] = None  # stdin content


@dataclass
class FileResult:
    display: str
    findings: list[Finding] = field(default_factory=list)
    internal_error: Optional[str] = None
    parse_error: Optional[Finding] = None  # also reported when TL000 is not selected


def rule_classes_for(codes: frozenset[str]) -> list[type]:
    return [RULES_BY_CODE[c] for c in sorted(codes) if c != SYNTAX_ERROR.code]


def lint_bytes(task: FileTask, data: bytes) -> FileResult:
    result = FileResult(task.display)
    try:
        classes = rule_classes_for(task.codes)
        options = {code: dict(values) for code, values in task.options}
        findings = check_source(task.display, data, classes, enabled_syntax_error=True, options=options)
        for f in findings:
            if f.code == SYNTAX_ERROR.code:
                result.parse_error = f
        result.findings = [f for f in findings if f.code in task.codes]
    except Exception as exc:  # a rule bug must not stop the run or print a traceback
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        result.internal_error = (f"internal error while checking {task.display}: {type(exc).__name__}: {exc} "
                                 f"(at {Path(frame.filename).name}:{frame.lineno}); please report this")
    return result


def read_task(task: FileTask) -> tuple[Optional[bytes], Optional[FileResult]]:
    if task.data is not None:
        return task.data, None
    try:
        with open(task.path, "rb") as fh:
            return fh.read(), None
    except OSError as exc:
        f = Finding(code=SYNTAX_ERROR.code, name=SYNTAX_ERROR.name, path=task.display, row=1, col=1,
                    end_row=1, end_col=2, severity=SYNTAX_ERROR.severity,
                    message=f"cannot read file: {exc.strerror or exc}")
        return None, FileResult(task.display, [f] if SYNTAX_ERROR.code in task.codes else [], parse_error=f)


def lint_task(task: FileTask) -> FileResult:
    data, failed = read_task(task)
    if failed is not None:
        return failed
    assert data is not None
    return lint_bytes(task, data)


def load_source(path: str, display: str):  # type: ignore[no-untyped-def]
    """Re-read a file for code frames in text output."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    source, _, _ = parse_source(display, data)
    return source
