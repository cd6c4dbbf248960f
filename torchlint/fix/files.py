"""`--fix`, `--diff`, `--fix-only` and `--add-noqa` over the files of a run: each file with
an applicable fix is fixed to a fixed point (re-linted with the same rules after each pass)
and written back atomically, or shown as a unified diff."""

from __future__ import annotations

import difflib
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Optional

from torchlint import notebook
from torchlint.diagnostics import Finding
from torchlint.fix.engine import FixOutcome, encode_like, fix_text, parse_error, write_atomic
from torchlint.fix.noqa import add_noqa
from torchlint.fix.policy import FixPolicy
from torchlint.linter import FileResult, FileTask, lint_bytes, read_task
from torchlint.source import DecodeFailure, decode_source


@dataclass
class FileFix:
    display: str
    before: str
    after: str
    applied: Counter
    error: Optional[str] = None


@dataclass
class FixReport:
    files: list[FileFix] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    stdin_output: Optional[str] = None  # fixed source for `-`, printed instead of written

    @property
    def applied(self) -> Counter:
        total: Counter = Counter()
        for f in self.files:
            total += f.applied
        return total


def _decode(data: bytes) -> Optional[str]:
    try:
        return decode_source(data)
    except DecodeFailure:
        return None


def fix_results(tasks: list[FileTask], results: list[FileResult], policy_for: Callable[[FileTask], FixPolicy],
                *, write: bool) -> FixReport:
    """Fix every file whose findings carry an allowed fix; each result's findings become
    the ones left on the fixed text. With `write=False` (`--diff`) nothing is written."""
    report = FixReport()
    for task, result in zip(tasks, results):
        policy = policy_for(task)
        # A notebook's findings count rows within cells of its JSON: never rewritten.
        if result.internal_error or notebook.is_notebook(task.display) \
                or not any(policy.allows(f) for f in result.findings):
            if task.path == "-" and task.data is not None:
                report.stdin_output = _decode(task.data)
            continue
        data, failed = read_task(task)
        text = _decode(data) if data is not None and failed is None else None
        if data is None or text is None:
            continue

        def lint(new_text: str, task: FileTask = task, data: bytes = data) -> list[Finding]:
            return lint_bytes(task, encode_like(data, new_text)).findings

        outcome: FixOutcome = fix_text(text, result.findings, lint, policy.allows)
        if outcome.error is not None:
            report.errors.append(f"{task.display}: {outcome.error}")
            continue
        if not outcome.converged:
            report.errors.append(f"{task.display}: fixes did not converge; the file was fixed as far as they got")
        result.findings = outcome.remaining
        if not outcome.changed:
            continue
        try:
            encoded = encode_like(data, outcome.text)
        except UnicodeEncodeError as exc:
            report.errors.append(f"{task.display}: the fixed text cannot be written in the file's encoding ({exc.reason})")
            continue
        if task.path == "-":
            report.stdin_output = outcome.text
        elif write:
            try:
                write_atomic(task.path, encoded)
            except OSError as exc:
                report.errors.append(f"{task.display}: cannot write the fixed file: {exc.strerror or exc}")
                continue
        report.files.append(FileFix(task.display, text, outcome.text, outcome.applied))
    return report


def unified_diff(fix: FileFix) -> str:
    return "".join(difflib.unified_diff(
        fix.before.splitlines(keepends=True), fix.after.splitlines(keepends=True),
        fromfile=f"a/{fix.display}", tofile=f"b/{fix.display}"))


def add_noqa_to_files(tasks: list[FileTask], results: list[FileResult]) -> tuple[int, list[str]]:
    """Append noqa directives for every finding; returns (directives added, errors)."""
    added_total = 0
    errors: list[str] = []
    for task, result in zip(tasks, results):
        if not result.findings or task.path == "-" or notebook.is_notebook(task.display):
            continue
        data, failed = read_task(task)
        text = _decode(data) if data is not None and failed is None else None
        if data is None or text is None:
            continue
        new_text, added, skipped = add_noqa(text, result.findings)
        if skipped:
            errors.append(f"{task.display}: {skipped} finding(s) sit on lines that cannot take a comment "
                          "(inside a multi-line string or after a backslash); add those noqa comments by hand")
        if not added:
            continue
        problem = parse_error(new_text, text)
        if problem is not None:
            errors.append(f"{task.display}: adding noqa comments produced invalid code ({problem}); file left unchanged")
            continue
        try:
            write_atomic(task.path, encode_like(data, new_text))
        except (OSError, UnicodeEncodeError) as exc:
            errors.append(f"{task.display}: cannot write the file: {exc}")
            continue
        added_total += added
    return added_total, errors
