"""Reading a source file: decoding, the line index and column conversion (noqa comments:
`torchlint.noqa`)."""

from __future__ import annotations

import io
import re
import sys

from torchlint.fast_dataclass import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable, Optional

# Python ends lines only at \n, \r\n and \r; str.splitlines() also splits at form feed,
# U+2028 and others, which would shift every later row (and its noqa).
LINE_BREAK = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> list[str]:
    """The physical lines of `text` as the parser counts them, without their breaks (a text
    ending in a break has a last, empty element)."""
    return LINE_BREAK.split(text) if "\r" in text else text.split("\n")


_LINE = r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z"  # compiled when a diff is asked for (by `re`)


def lines_with_breaks(text: str) -> list[str]:
    """The physical lines of `text` with their breaks (the last one may have none), split
    where the parser splits them: `str.splitlines(keepends=True)` without its extra breaks."""
    return re.findall(_LINE, text)


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


class DecodeFailure(Exception):
    def __init__(self, message: str, row: int, col: int) -> None:
        super().__init__(message)
        self.message = message
        self.row = row
        self.col = col


NOTEBOOK_SUFFIX = ".ipynb"


def is_notebook(path: str) -> bool:
    """Whether `path` names a Jupyter notebook (torchlint.notebook reads those; here, so that a
    run on .py files never imports it)."""
    return path.lower().endswith(NOTEBOOK_SUFFIX)


def _declared_encoding(data: bytes) -> str:
    """`tokenize.detect_encoding`'s answer. Its default, UTF-8, when the two lines it reads
    are ASCII without a BOM or the word "coding" (most files): then tokenize, ~1 ms to
    import, is not needed."""
    first, _, rest = data.partition(b"\n")
    second = rest.partition(b"\n")[0]
    if first.isascii() and second.isascii() and b"coding" not in first and b"coding" not in second:
        return "utf-8"
    import tokenize

    return tokenize.detect_encoding(io.BytesIO(data).readline)[0]


def decode_source(data: bytes) -> str:
    """Decode like the interpreter does (PEP 263 cookie, BOM, UTF-8 default)."""
    try:
        encoding = _declared_encoding(data)
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
    """A decoded source file and its lines."""

    path: str
    text: str

    def __post_init__(self) -> None:
        self.lines = physical_lines(self.text)

    def line(self, row: int) -> str:
        return self.lines[row - 1] if 0 < row <= len(self.lines) else ""

    def to_col(self, row: int, byte_offset: int) -> int:
        """ast's UTF-8 byte offset -> 1-based code-point column."""
        line = self.line(row)
        if line.isascii():
            return byte_offset + 1
        return len(line.encode("utf-8")[:byte_offset].decode("utf-8", errors="replace")) + 1


# Syntax that a newer Python accepts but the running one may not; used to explain
# a parse failure instead of just saying "invalid syntax". Patterns, compiled (and cached by
# `re`) only when a file fails to parse.
_NEWER_SYNTAX = [
    ((3, 10), r"^\s*(match\s+\S.*:|case\s+\S.*:)\s*(#.*)?$", "match statements"),
    ((3, 10), r"^\s*with\s*\(.*", "parenthesized context managers"),
    ((3, 11), r"^\s*except\s*\*", "except* (exception groups)"),
    ((3, 12), r"^\s*type\s+\w+(\[.*\])?\s*=", "type aliases (PEP 695)"),
    ((3, 12), r"^\s*(async\s+)?(def|class)\s+\w+\[", "type parameters (PEP 695)"),
    ((3, 12), r"f(['\"]).*\{[^}]*\1", "nested quotes in f-strings (PEP 701)"),
    ((3, 14), r"^\s*except\s+[\w.]+\s*,\s*[\w.]+.*:", "except without parentheses (PEP 758)"),
]


def newer_syntax_hint(line: str) -> Optional[str]:
    running = sys.version_info[:2]
    for version, pattern, what in _NEWER_SYNTAX:
        if running < version and re.search(pattern, line):
            return (
                f"this line uses {what}, which needs Python {version[0]}.{version[1]}+; "
                f"torchlint is running on Python {running[0]}.{running[1]}"
            )
    return None
