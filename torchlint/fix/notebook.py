"""`--fix`, `--diff` and `--add-noqa` on Jupyter notebooks, as ruff does them: the code
cells are changed, and nothing else in the file. Each changed cell's `source` value is
re-encoded in the style the file already uses (a list of line strings with the same
indentation, or one string) and spliced into the JSON text at that value's offsets, so
outputs, metadata, key order and formatting stay byte for byte.

A finding's fix edits count rows within its cell (a fix that would span cells, or touch a
line whose IPython syntax the linter blanked, was dropped when the finding was placed in
its cell). After every pass the notebook is linted again, as a .py file is, and the result
must be valid JSON whose cells still parse."""

from __future__ import annotations

import ast
import codecs
import json
import re
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Optional

from torchlint.diagnostics import Finding
from torchlint.fix.engine import MAX_PASSES, apply_once
from torchlint.notebook import python_lines, written_python
from torchlint.notebook_positions import cell_source_spans
from torchlint.source import physical_lines

Lint = Callable[[bytes], list[Finding]]


@dataclass
class NotebookText:
    """A notebook file's text (without a UTF-8 BOM, kept aside) and its code cells' sources."""

    text: str
    bom: bool
    sources: dict[int, str]  # cell number (among all cells) -> its source text

    @classmethod
    def read(cls, data: bytes) -> Optional["NotebookText"]:
        bom = data.startswith(codecs.BOM_UTF8)
        try:
            text = data[len(codecs.BOM_UTF8) if bom else 0:].decode("utf-8")
            cells = json.loads(text)["cells"]
        except (UnicodeDecodeError, ValueError, KeyError, TypeError, RecursionError):
            return None
        sources = {}
        for number, cell in enumerate(cells, 1):
            if isinstance(cell, dict) and cell.get("cell_type") == "code":
                source = cell.get("source", "")
                sources[number] = "".join(source) if isinstance(source, list) else source
        return cls(text, bom, sources)

    def encode(self) -> bytes:
        return (codecs.BOM_UTF8 if self.bom else b"") + self.text.encode("utf-8")

    def with_sources(self, changed: dict[int, str]) -> Optional["NotebookText"]:
        """The notebook with these cells' sources replaced; None when the file's layout
        cannot be rewritten or the result does not read back as the same cells."""
        spans = cell_source_spans(self.text)
        if spans is None or not set(changed) <= set(spans):
            return None
        text = self.text
        for number in sorted(changed, reverse=True):
            start, end = spans[number]
            text = text[:start] + encode_source(changed[number], text[start:end], _indent_before(text, start)) + text[end:]
        result = NotebookText.read(text.encode("utf-8"))
        if result is None or result.sources != {**self.sources, **changed}:
            return None
        result.bom = self.bom
        return result


def _indent_before(text: str, offset: int) -> str:
    line_start = text.rfind("\n", 0, offset) + 1
    return re.match(r"[ \t]*", text[line_start:]).group(0)  # type: ignore[union-attr]


def encode_source(source: str, original: str, key_indent: str) -> str:
    """`source` as a JSON value in `original`'s style: a list of lines (one per file line,
    indented as its elements were) or a single string; escapes as the file writes them."""
    ascii_only = "\\u" in original and original.isascii()
    if not original.lstrip().startswith("["):
        return json.dumps(source, ensure_ascii=ascii_only)
    lines = source.splitlines(keepends=True)
    if not lines:
        return "[]"
    opened = re.match(r"\[(\s*)", original)
    inner = opened.group(1) if opened and opened.group(1) else ""
    if "\n" not in inner:  # a compact list on one line: keep it compact
        return "[" + ", ".join(json.dumps(line, ensure_ascii=ascii_only) for line in lines) + "]"
    closing = re.search(r"(\s*)\]\s*$", original)
    close = closing.group(1) if closing and "\n" in closing.group(1) else "\n" + key_indent
    return "[" + inner + ("," + inner).join(json.dumps(line, ensure_ascii=ascii_only) for line in lines) + close + "]"


def _one_pass(current: NotebookText, findings: list[Finding], allow: Callable[[Finding], bool]) -> tuple[dict[int, str], Counter]:
    """The cells one pass of fixes changes, and the fixes applied per code. A finding's fix
    edits count rows within its cell (notebook._in_cell moved them there)."""
    by_cell: dict[int, list[Finding]] = {}
    for finding in findings:
        if finding.fix is not None and finding.fix.edits and finding.cell in current.sources and allow(finding):
            by_cell.setdefault(finding.cell, []).append(finding)
    changed: dict[int, str] = {}
    applied: Counter = Counter()
    for number, cell_findings in by_cell.items():
        new_source, step = apply_once(current.sources[number], cell_findings)
        if new_source != current.sources[number]:
            changed[number] = new_source
            applied += step
    return changed, applied


@dataclass
class NotebookFix:
    before: NotebookText
    after: NotebookText
    applied: Counter
    remaining: list[Finding]
    error: Optional[str] = None
    converged: bool = True

    def changed_cells(self) -> list[tuple[int, str, str]]:
        return [(n, self.before.sources[n], self.after.sources[n]) for n in sorted(self.before.sources)
                if self.after.sources.get(n) != self.before.sources[n]]


def fix_notebook(data: bytes, findings: list[Finding], lint: Lint, allow: Callable[[Finding], bool],
                 path: str) -> Optional[NotebookFix]:
    """Fix the notebook `data` to a fixed point; None when it is not a notebook this can
    rewrite. With `error` set, nothing is to be written."""
    original = NotebookText.read(data)
    if original is None:
        return None
    current: NotebookText = original
    applied: Counter = Counter()
    for _ in range(MAX_PASSES):
        changed, step = _one_pass(current, findings, allow)
        if not changed:
            return NotebookFix(original, current, applied, findings)
        problem = _cell_parse_error(changed)
        rewritten = current.with_sources(changed) if problem is None else None
        if rewritten is None:
            why = problem or "the fixed cells could not be written back into the notebook's JSON"
            return NotebookFix(original, original, Counter(), findings, error=f"{why}; file left unchanged")
        current, applied = rewritten, applied + step
        findings = lint(current.encode())
    leftover = [f for f in findings if f.fix is not None and allow(f)]
    return NotebookFix(original, current, applied, findings, converged=not leftover)


def _cell_parse_error(changed: dict[int, str]) -> Optional[str]:
    for number, source in sorted(changed.items()):
        try:
            lines = physical_lines(source)
            ast.parse("\n".join(written_python(lines) or python_lines(lines)))
        except (SyntaxError, ValueError) as exc:
            return f"fixes produced invalid code in cell {number} ({exc})"
    return None


def add_noqa_to_notebook(data: bytes, findings: list[Finding],
                         add_noqa: Callable[[str, list[Finding]], tuple[str, int, int]]) -> tuple[Optional[bytes], int, int]:
    """(new file bytes or None when unchanged or not rewritable, directives added, findings
    whose line cannot take a comment): noqa comments in each cell, as for a .py file."""
    current = NotebookText.read(data)
    if current is None:
        return None, 0, 0
    changed: dict[int, str] = {}
    added = skipped = 0
    for number, source in current.sources.items():
        cell_findings = [f for f in findings if f.cell == number]
        if not cell_findings:
            continue
        new_source, n_added, n_skipped = add_noqa(source, cell_findings)
        added, skipped = added + n_added, skipped + n_skipped
        if new_source != source:
            changed[number] = new_source
    if not changed or _cell_parse_error(changed) is not None:
        return None, added if changed else 0, skipped
    rewritten = current.with_sources(changed)
    return (rewritten.encode() if rewritten is not None else None), added, skipped
