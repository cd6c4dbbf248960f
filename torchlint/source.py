"""Reading a source file: decoding, the line index, column conversion and noqa comments."""

from __future__ import annotations

import io
import re
import sys
import tokenize
from dataclasses import dataclass
from typing import Callable, Optional

# `# noqa`, `# noqa: TL101, TL102` (case-insensitive, like ruff). Codes of other
# tools (E501, B008) in the same comment are kept but never match a TL code.
NOQA_RE = re.compile(
    r"#\s*noqa(?::[\s]?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?",
    re.IGNORECASE,
)
# File-level suppression, all codes or the codes listed: torchlint's own directive and
# flake8's file-level one, which ruff honours too (flake8 itself skips such a file, TL
# codes included). Spelled out in the README, not here: this comment would match itself.
_FILE_NOQA_RE = re.compile(
    r"#\s*(?:torchlint|flake8)\s*:\s*noqa(?::\s?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?",
    re.IGNORECASE,
)
CODE_SPLIT = re.compile(r"[,\s]+")
# Python ends lines only at \n, \r\n and \r; str.splitlines() also splits at form feed,
# U+2028 and others, which would shift every later row (and its noqa).
LINE_BREAK = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> list[str]:
    """The physical lines of `text` as the parser counts them, without their breaks (a text
    ending in a break has a last, empty element)."""
    return LINE_BREAK.split(text) if "\r" in text else text.split("\n")


def physical_lines(text: str) -> list[str]:
    """`split_lines` without the empty element after a final line break: one per line shown."""
    lines = split_lines(text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def tokenizer_readline(text: str) -> Callable[[], str]:
    """A readline for `tokenize` whose lines end where the parser's do. io.StringIO(text)
    ends them only at \\n, so after a lone \\r every row would lag the parser's by one
    (and a `# noqa` on the next line would suppress this one)."""
    return io.StringIO(LINE_BREAK.sub("\n", text) if "\r" in text else text).readline


def line_starts(text: str) -> list[int]:
    """The offset in `text` where each line starts, lines counted as `split_lines` counts them."""
    return [0] + [m.end() for m in LINE_BREAK.finditer(text)]

ALL_CODES = None  # sentinel in noqa maps meaning "every code"


class DecodeFailure(Exception):
    def __init__(self, message: str, row: int, col: int) -> None:
        super().__init__(message)
        self.message = message
        self.row = row
        self.col = col


def decode_source(data: bytes) -> str:
    """Decode like the interpreter does (PEP 263 cookie, BOM, UTF-8 default)."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:  # bad cookie
        raise DecodeFailure(str(exc), getattr(exc, "lineno", None) or 1, 1) from None
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        row = data.count(b"\n", 0, exc.start) + 1
        line_start = data.rfind(b"\n", 0, exc.start) + 1
        col = len(data[line_start:exc.start].decode(encoding, errors="replace")) + 1
        raise DecodeFailure(
            f"file is not valid {encoding}: cannot decode byte {data[exc.start]:#04x}", row, col
        ) from None
    except LookupError:
        raise DecodeFailure(f"unknown encoding {encoding!r}", 1, 1) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return text


@dataclass
class SourceFile:
    path: str
    text: str

    def __post_init__(self) -> None:
        self.lines = physical_lines(self.text)
        self._noqa: Optional[dict[int, Optional[frozenset[str]]]] = None
        self._file_noqa: Optional[tuple[bool, frozenset[str]]] = None
        # (row, code) of every finding a line's `# noqa: CODE` suppressed, for TL001.
        self.noqa_hits: set[tuple[int, str]] = set()

    def line(self, row: int) -> str:
        return self.lines[row - 1] if 0 < row <= len(self.lines) else ""

    def to_col(self, row: int, byte_offset: int) -> int:
        """ast's UTF-8 byte offset -> 1-based code-point column."""
        line = self.line(row)
        if line.isascii():
            return byte_offset + 1
        return len(line.encode("utf-8")[:byte_offset].decode("utf-8", errors="replace")) + 1

    # -- suppression -------------------------------------------------------
    def comments(self) -> list[tuple[int, str]]:
        """(row, text) of every real comment, read with the tokenizer so a `# noqa` inside a
        string or docstring is never taken for one."""
        found: list[tuple[int, str]] = []
        try:
            for tok in tokenize.generate_tokens(tokenizer_readline(self.text)):
                if tok.type == tokenize.COMMENT:
                    found.append((tok.start[0], tok.string))
        except (tokenize.TokenError, SyntaxError, ValueError):
            # Source the tokenizer rejects (reported as TL000): fall back to a line scan
            # that skips quoted text on the same line.
            found = [(row, c) for row, line in enumerate(self.lines, 1)
                     if "#" in line and (c := _comment_part(line)) is not None]
        return found

    def _scan_noqa(self) -> None:
        noqa: dict[int, Optional[frozenset[str]]] = {}
        file_all = False
        file_codes: set[str] = set()
        if "noqa" in self.text.lower():
            for row, comment in self.comments():
                if "noqa" not in comment.lower():
                    continue
                m = _FILE_NOQA_RE.search(comment)
                if m:
                    if m.group("codes"):
                        file_codes.update(_split_codes(m.group("codes")))
                    else:
                        file_all = True
                    continue
                m = NOQA_RE.search(comment)
                if m:
                    codes = m.group("codes")
                    noqa[row] = frozenset(_split_codes(codes)) if codes else ALL_CODES
        self._noqa = noqa
        self._file_noqa = (file_all, frozenset(file_codes))

    def is_suppressed(self, code: str, row: int) -> bool:
        if self._noqa is None:
            self._scan_noqa()
        assert self._noqa is not None and self._file_noqa is not None
        file_all, file_codes = self._file_noqa
        if file_all or code in file_codes:
            return True
        if row in self._noqa:
            codes = self._noqa[row]
            if codes is ALL_CODES or code in codes:  # type: ignore[operator]
                self.noqa_hits.add((row, code))
                return True
        return False

    def noqa_rows(self) -> dict[int, Optional[frozenset[str]]]:
        """Line number -> the codes its `# noqa:` names (ALL_CODES for a bare `# noqa`)."""
        if self._noqa is None:
            self._scan_noqa()
        assert self._noqa is not None
        return self._noqa


def _split_codes(codes: str) -> list[str]:
    return [c.upper() for c in CODE_SPLIT.split(codes.strip()) if c]


def _comment_part(line: str) -> Optional[str]:
    """The comment of a physical line, skipping '#' inside string literals."""
    quote: Optional[str] = None
    i = 0
    n = len(line)
    while i < n:
        ch = line[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if line.startswith(quote, i):
                i += len(quote)
                quote = None
                continue
        elif ch in "'\"":
            quote = line[i:i + 3] if line[i:i + 3] in ('"""', "'''") else ch
            i += len(quote)
            continue
        elif ch == "#":
            return line[i:]
        i += 1
    return None


# Syntax that a newer Python accepts but the running one may not; used to explain
# a parse failure instead of just saying "invalid syntax".
_NEWER_SYNTAX = [
    ((3, 10), re.compile(r"^\s*(match\s+\S.*:|case\s+\S.*:)\s*(#.*)?$"), "match statements"),
    ((3, 10), re.compile(r"^\s*with\s*\(.*"), "parenthesized context managers"),
    ((3, 11), re.compile(r"^\s*except\s*\*"), "except* (exception groups)"),
    ((3, 12), re.compile(r"^\s*type\s+\w+(\[.*\])?\s*="), "type aliases (PEP 695)"),
    ((3, 12), re.compile(r"^\s*(async\s+)?(def|class)\s+\w+\["), "type parameters (PEP 695)"),
    ((3, 12), re.compile(r"f(['\"]).*\{[^}]*\1"), "nested quotes in f-strings (PEP 701)"),
    ((3, 14), re.compile(r"^\s*except\s+[\w.]+\s*,\s*[\w.]+.*:"), "except without parentheses (PEP 758)"),
]


def newer_syntax_hint(line: str) -> Optional[str]:
    running = sys.version_info[:2]
    for version, pattern, what in _NEWER_SYNTAX:
        if running < version and pattern.search(line):
            return (
                f"this line uses {what}, which needs Python {version[0]}.{version[1]}+; "
                f"torchlint is running on Python {running[0]}.{running[1]}"
            )
    return None
