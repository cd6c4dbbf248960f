"""Applying fixes: text edits applied to a fixed point, each pass's result checked by
parsing it with LibCST and `ast` (fix/write.py writes the files). Imported only for `--fix`,
`--diff` and `--add-noqa`, so a lint-only run never loads LibCST."""

from __future__ import annotations

import ast
import codecs
import io
import tokenize
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional

import libcst

from torchlint.diagnostics import Finding
from torchlint.records import Edit, Fix
from torchlint.source import LINE_BREAK, line_starts

# ruff stops after 100 passes; our fixes converge in two or three.
MAX_PASSES = 10


Lint = Callable[[str], list[Finding]]


@dataclass
class FixOutcome:
    text: str  # the fixed text; the original one when fixing failed
    applied: Counter = field(default_factory=Counter)  # code -> fixes applied
    remaining: list[Finding] = field(default_factory=list)  # findings on `text`
    error: Optional[str] = None
    converged: bool = True

    @property
    def changed(self) -> bool:
        return sum(self.applied.values()) > 0


class _LineIndex:
    """(row, code-point column) -> offset in the text, lines counted the way `ast` does."""

    def __init__(self, text: str) -> None:
        self.starts = line_starts(text)
        self.length = len(text)

    def holds(self, edit: Edit) -> bool:
        return edit.end[0] <= len(self.starts)

    def offset(self, position: tuple[int, int]) -> int:
        row, col = position
        return min(self.starts[row - 1] + col - 1, self.length)


def newline_of(text: str) -> str:
    m = LINE_BREAK.search(text)
    return m.group(0) if m else "\n"


def _spans(fix: Fix, index: _LineIndex) -> Optional[list[tuple[int, int, str]]]:
    """The fix's edits as text offsets; None when one reaches past the end of the file."""
    if not all(index.holds(e) for e in fix.edits):
        return None
    return sorted((index.offset(e.start), index.offset(e.end), e.content) for e in fix.edits)


def _overlaps(a: tuple[int, int, str], b: tuple[int, int, str]) -> bool:
    return (a[0] < b[1] and b[0] < a[1]) or a[0] == b[0]


def apply_once(text: str, findings: Iterable[Finding]) -> tuple[str, Counter]:
    """Apply every fix that does not touch an edit already taken (those wait for the next
    pass, on the re-linted text). Returns the new text and the fixes applied per code."""
    index = _LineIndex(text)
    newline = newline_of(text)
    taken: list[tuple[int, int, str]] = []
    applied: Counter = Counter()
    seen: set[tuple] = set()
    for finding in sorted(findings, key=Finding.sort_key):
        assert finding.fix is not None
        spans = _spans(finding.fix, index)
        if spans is None:
            continue
        key = tuple(spans)
        if key in seen:  # two findings proposing the same edit
            continue
        if any(_overlaps(s, t) for s in spans for t in taken):
            continue
        seen.add(key)
        taken.extend(spans)
        applied[finding.code] += 1
    for start, end, content in sorted(taken, reverse=True):
        text = text[:start] + content.replace("\n", newline) + text[end:]
    return text, applied


def parse_error(text: str, original: Optional[str] = None) -> Optional[str]:
    """Why `text` is not valid Python, or None. `ast` checks the grammar of the running
    interpreter, LibCST the concrete syntax we write back. LibCST lags behind the newest
    grammar, so a LibCST failure counts only when it parses the `original` text."""
    try:
        ast.parse(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        return f"{type(exc).__name__}: {exc}"
    try:
        libcst.parse_module(text)
    except (libcst.ParserSyntaxError, RecursionError) as exc:
        if original is not None and not libcst_parses(original):
            return None
        return f"LibCST: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
    return None


def libcst_parses(text: str) -> bool:
    try:
        libcst.parse_module(text)
        return True
    except (libcst.ParserSyntaxError, RecursionError):
        return False


def fix_text(text: str, findings: list[Finding], lint: Lint, allow: Callable[[Finding], bool],
             max_passes: int = MAX_PASSES) -> FixOutcome:
    """Fix `text` to a fixed point: apply the allowed fixes, re-lint, repeat. If any pass
    produces text that does not parse, nothing is applied and `error` says why."""
    original = text
    applied: Counter = Counter()
    current_findings = findings
    for _ in range(max_passes):
        candidates = [f for f in current_findings if f.fix is not None and allow(f)]
        if not candidates:
            return FixOutcome(text, applied, current_findings)
        new_text, step = apply_once(text, candidates)
        if new_text == text:
            return FixOutcome(text, applied, current_findings)
        problem = parse_error(new_text, original)
        if problem is not None:
            codes = ", ".join(sorted(step))
            return FixOutcome(original, Counter(), findings,
                              error=f"fixes for {codes} produced invalid code ({problem}); file left unchanged")
        applied += step
        text = new_text
        current_findings = lint(text)
    leftover = [f for f in current_findings if f.fix is not None and allow(f)]
    return FixOutcome(text, applied, current_findings, converged=not leftover)


# -- files ------------------------------------------------------------------

def encode_like(original: bytes, text: str) -> bytes:
    """Encode `text` as the original file was: same PEP 263 encoding, same BOM."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(original).readline)
    bom = original.startswith(codecs.BOM_UTF8)
    if encoding == "utf-8-sig":
        encoding = "utf-8"
    return (codecs.BOM_UTF8 if bom else b"") + text.encode(encoding)
