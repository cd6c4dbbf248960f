"""Positions in an open document for the language server: torchlint's 1-based rows and
code-point columns to LSP positions in the client's units (UTF-16 by default) and back,
the document's `# noqa` directives and which lines can take a comment. Built once per publication or request, so converting
one position costs O(1) and a publication is linear in the document plus its findings."""

from __future__ import annotations

import bisect
import itertools
from typing import Any, Callable, Optional

from lsprotocol import types
from pygls.workspace import TextDocument

from torchlint import noqa
from torchlint.source import split_lines


class DocumentIndex:
    """One document's lines, counted as Python counts them (at CR LF, LF or CR; LSP counts
    the same), built once per publication or request: converting a position costs O(1)
    (pygls re-splits the whole document for each one, which made publishing quadratic)."""

    def __init__(self, document: TextDocument) -> None:
        self.document = document
        self.source = document.source
        self.lines = split_lines(self.source)
        self.width = _UNIT_WIDTH.get(document.position_codec.encoding, _utf16_width)
        self._prefix: dict[int, Optional[list[int]]] = {}  # row -> client units before each column
        self._tokens: Optional[noqa.TokenScan] = None
        self._directives: Optional[noqa.Directives] = None

    def _units(self, row: int) -> Optional[list[int]]:
        """Client units before each code point of line `row`; None where they are equal."""
        if row not in self._prefix:
            line = self.lines[row]
            self._prefix[row] = None if self.width is None or line.isascii() else \
                list(itertools.accumulate((self.width(c) for c in line), initial=0))
        return self._prefix[row]

    def to_client(self, row: int, col: int) -> types.Position:
        """0-based row and code-point column -> an LSP position in the client's units."""
        if row >= len(self.lines):
            return types.Position(line=len(self.lines), character=0)
        col = min(col, len(self.lines[row]))
        units = self._units(row)
        return types.Position(line=row, character=col if units is None else units[col])

    def from_client(self, position: types.Position) -> tuple[int, int]:
        """An LSP position -> (0-based row, code-point column), clamped to the document."""
        if not self.lines:
            return 0, 0
        if position.line >= len(self.lines):
            return len(self.lines) - 1, len(self.lines[-1])
        units = self._units(position.line)
        if units is None:
            return position.line, min(position.character, len(self.lines[position.line]))
        return position.line, bisect.bisect_right(units, position.character) - 1

    def range(self, row: int, col: int, end_row: int, end_col: int) -> types.Range:
        """1-based code-point positions (torchlint's) -> an LSP range in the client's units."""
        start = (max(row - 1, 0), max(col - 1, 0))
        end = max(start, (max(end_row - 1, 0), max(end_col - 1, 0)))
        return types.Range(start=self.to_client(*start), end=self.to_client(*end))

    def tokens(self) -> noqa.TokenScan:
        """The document's comments and string rows: one tokenize pass per index."""
        if self._tokens is None:
            self._tokens = noqa.scan(self.source, self.lines)
        return self._tokens

    def directives(self) -> noqa.Directives:
        if self._directives is None:
            self._directives = noqa.parse(self.source, self.lines, self.tokens())
        return self._directives

    def comment_allowed_at_end(self, row: int) -> bool:
        return self.tokens().comment_allowed_at_end(row)


def _utf16_width(char: str) -> int:
    return 2 if ord(char) > 0xFFFF else 1


def _utf8_width(char: str) -> int:
    code = ord(char)
    return 1 if code < 0x80 else 2 if code < 0x800 else 3 if code < 0x10000 else 4


# None: client units are code points.
_UNIT_WIDTH: dict[Any, Optional[Callable[[str], int]]] = {
    types.PositionEncodingKind.Utf8: _utf8_width, types.PositionEncodingKind.Utf16: _utf16_width,
    types.PositionEncodingKind.Utf32: None}
