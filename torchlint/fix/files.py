"""`--fix`, `--diff`, `--fix-only` and `--add-noqa` over the files of a run: each file with
an applicable fix is fixed to a fixed point (re-linted with the same rules after each pass)
and written back (fix/write.py: only if unchanged meanwhile and writable), or shown as a
unified diff."""

from __future__ import annotations

import difflib
import os
from collections import Counter
from dataclasses import dataclass, field

from torchlint import notebook
from torchlint.diagnostics import Finding
from torchlint.fix.engine import FixOutcome, encode_like, fix_text, parse_error
from torchlint.fix.noqa import add_noqa
from torchlint.fix.policy import FixPolicy
from torchlint.fix.write import FixSkipped, write_fixed
from torchlint.linter import FileResult, FileTask, lint_bytes, lint_task, read_task
from torchlint.source import DecodeFailure, decode_source, lines_with_breaks

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable, Optional


@dataclass
class FileFix:
    display: str
    before: str
    after: str
    applied: Counter
    error: Optional[str] = None
    cells: Optional[list[tuple[int, str, str]]] = None  # a notebook: (cell, before, after) of each changed cell


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
    """Fix every file whose findings carry an allowed fix; each fixed result's findings
    become the ones left on the fixed text. With `write=False` (`--diff`) nothing is written.
    A file reached through several paths (a symlink and its target) is fixed once; the
    other paths are linted again afterwards. A file that is not written keeps the findings
    of the text on disk."""
    report = FixReport()
    written: dict[str, bool] = {}  # real path -> whether a fix was written to it
    aliases: list[tuple[FileTask, FileResult]] = []
    for task, result in zip(tasks, results):
        policy = policy_for(task)
        if result.internal_error or not any(policy.allows(f) for f in result.findings):
            if task.path == "-" and task.data is not None:
                report.stdin_output = _decode(task.data)
            continue
        if task.path != "-":
            real = os.path.realpath(task.path)
            if real in written:
                aliases.append((task, result))
                continue
            written[real] = False
        fixed = _fix_one(task, result, policy, write, report)
        if fixed is not None:
            report.files.append(fixed)
            if task.path != "-":
                written[os.path.realpath(task.path)] = write
    for task, result in aliases:
        if written[os.path.realpath(task.path)]:
            fresh = lint_task(task)  # the shared file as it is now
            result.findings, result.parse_error = fresh.findings, fresh.parse_error
    return report


def _fix_one(task: FileTask, result: FileResult, policy: FixPolicy, write: bool,
             report: FixReport) -> Optional[FileFix]:
    if notebook.is_notebook(task.display):
        return _fix_notebook(task, result, policy, write, report)
    data, failed = read_task(task)
    text = _decode(data) if data is not None and failed is None else None
    if data is None or text is None:
        return None

    def lint(new_text: str) -> list[Finding]:
        return lint_bytes(task, encode_like(data, new_text)).findings

    # The findings came from an earlier read: fix what the file holds now.
    current = result.findings if task.data is not None else lint_bytes(task, data).findings
    outcome: FixOutcome = fix_text(text, current, lint, policy.allows)
    if outcome.error is not None:
        report.errors.append(f"{task.display}: {outcome.error}")
        return None
    if not outcome.converged:
        report.errors.append(f"{task.display}: fixes did not converge; the file was fixed as far as they got")
    if not outcome.changed:
        result.findings = outcome.remaining
        return None
    try:
        encoded = encode_like(data, outcome.text)
    except UnicodeEncodeError as exc:
        report.errors.append(f"{task.display}: the fixed text cannot be written in the file's encoding ({exc.reason})")
        return None
    if task.path == "-":
        report.stdin_output = outcome.text
    elif write:
        problem = _write(task, data, encoded)
        if problem is not None:
            report.errors.append(problem)
            result.findings = current  # what the file on disk still holds
            return None
    result.findings = outcome.remaining
    return FileFix(task.display, text, outcome.text, outcome.applied)


def _fix_notebook(task: FileTask, result: FileResult, policy: FixPolicy, write: bool,
                  report: FixReport) -> Optional[FileFix]:
    """A notebook's code cells fixed (fix/notebook.py); the rest of the file is kept."""
    from torchlint.fix.notebook import fix_notebook

    data, failed = read_task(task)
    if data is None or failed is not None:
        return None
    current = result.findings if task.data is not None else lint_bytes(task, data).findings
    outcome = fix_notebook(data, current, lambda new: lint_bytes(task, new).findings, policy.allows, task.display)
    if outcome is None:
        return None
    if outcome.error is not None:
        report.errors.append(f"{task.display}: {outcome.error}")
        return None
    if not outcome.converged:
        report.errors.append(f"{task.display}: fixes did not converge; the file was fixed as far as they got")
    cells = outcome.changed_cells()
    if not cells:
        result.findings = outcome.remaining
        return None
    if task.path == "-":
        report.stdin_output = outcome.after.encode().decode("utf-8", "surrogateescape")
    elif write:
        problem = _write(task, data, outcome.after.encode())
        if problem is not None:
            report.errors.append(problem)
            result.findings = current
            return None
    result.findings = outcome.remaining
    return FileFix(task.display, outcome.before.text, outcome.after.text, outcome.applied, cells=cells)


def _write(task: FileTask, before: bytes, after: bytes) -> Optional[str]:
    """Write the fixed file; None when written, else why not."""
    try:
        write_fixed(task.path, before, after)
    except FixSkipped as exc:
        return f"{task.display}: {exc}"
    except OSError as exc:
        return f"{task.display}: cannot write the fixed file: {exc.strerror or exc}; the file is unchanged"
    return None


def unified_diff(fix: FileFix) -> str:
    if fix.cells is not None:  # a notebook: one diff per changed cell, as ruff shows them
        return "".join(text_diff(before, after, f"{fix.display}:cell {number}") for number, before, after in fix.cells)
    return text_diff(fix.before, fix.after, fix.display)


def text_diff(before: str, after: str, name: str) -> str:
    """`--diff`'s unified diff, with lines where Python ends them (a form feed or U+2028 inside
    a line is no break, so `git apply` agrees), and a last line without a newline marked as
    git marks it rather than run into the next line of the diff."""
    lines = difflib.unified_diff(lines_with_breaks(before), lines_with_breaks(after),
                                 fromfile=f"a/{name}", tofile=f"b/{name}")
    return "".join(line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n"
                   for line in lines)


def add_noqa_to_files(tasks: list[FileTask], results: list[FileResult]) -> tuple[int, list[str]]:
    """Append noqa directives for every finding; returns (directives added, errors)."""
    added_total = 0
    errors: list[str] = []
    done: set[str] = set()
    for task, result in zip(tasks, results):
        if not result.findings or task.path == "-":
            continue
        real = os.path.realpath(task.path)
        if real in done:  # a symlink and its target: one file, one set of comments
            continue
        done.add(real)
        data, failed = read_task(task)
        if data is None or failed is not None:
            continue
        added, problems = _noqa_one(task, data, result.findings)
        added_total += added
        errors += problems
    return added_total, errors


def _noqa_one(task: FileTask, data: bytes, findings: list[Finding]) -> tuple[int, list[str]]:
    """Add the noqa comments to one file (a notebook: in its cells); (added, errors)."""
    if notebook.is_notebook(task.display):
        from torchlint.fix.notebook import add_noqa_to_notebook

        encoded, added, skipped = add_noqa_to_notebook(data, findings, add_noqa)
        errors = _skipped_noqa(task, skipped)
        if encoded is None:
            if added:
                errors.append(f"{task.display}: adding noqa comments produced cells that do not parse or a "
                              "notebook that cannot be written back; file left unchanged")
            return 0, errors
    else:
        text = _decode(data)
        if text is None:
            return 0, []
        new_text, added, skipped = add_noqa(text, findings)
        errors = _skipped_noqa(task, skipped)
        if not added:
            return 0, errors
        problem = parse_error(new_text, text)
        if problem is not None:
            return 0, errors + [f"{task.display}: adding noqa comments produced invalid code ({problem}); file left unchanged"]
        try:
            encoded = encode_like(data, new_text)
        except UnicodeEncodeError as exc:
            return 0, errors + [f"{task.display}: cannot write the file: {exc}"]
    problem = _write(task, data, encoded)
    return (0, errors + [problem]) if problem is not None else (added, errors)


def _skipped_noqa(task: FileTask, skipped: int) -> list[str]:
    if not skipped:
        return []
    return [f"{task.display}: {skipped} finding(s) sit on lines that cannot take a comment "
            "(inside a multi-line string or after a backslash); add those noqa comments by hand"]
