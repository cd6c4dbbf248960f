"""Where a notebook cell's lines sit in the .ipynb file itself, for formats whose consumers
show the file (SARIF on GitHub code scanning, `github` annotations): a finding at cell 4,
line 3 is reported at the line of the JSON file that holds that source line.

nbformat stores a cell's `source` as a list of strings (Jupyter writes one line per string,
each on its own line of the file) or as one string. A source line maps to the file line
where its string starts; lines that share one JSON string (a one-string source) all map to
that string's line, which is the line a reader of the file sees the code on."""

from __future__ import annotations

import json
from json.decoder import scanstring  # type: ignore[attr-defined]  # public, but not in typeshed

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional

_WHITESPACE = " \t\n\r"
_DECODER = json.JSONDecoder()


class _Scanner:
    """Walks JSON text (already known to parse) and records, for each cell's `source`, the
    (file line, text) of its strings. Linear; no value is built except those strings."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0
        self.line = 1
        self.sources: dict[int, list[tuple[int, str]]] = {}
        self.spans: dict[int, tuple[int, int]] = {}  # cell -> text offsets of its `source` value

    def skip(self) -> None:
        text, i = self.text, self.i
        while i < len(text) and text[i] in _WHITESPACE:
            if text[i] == "\n":
                self.line += 1
            i += 1
        self.i = i

    def advance_to(self, end: int) -> None:
        self.line += self.text.count("\n", self.i, end)  # only inside a raw value (never in a JSON string)
        self.i = end

    def string(self) -> tuple[int, str]:
        line = self.line
        value, end = scanstring(self.text, self.i + 1)
        self.i = end  # a JSON string holds no raw line break
        return line, value

    def value(self, path: tuple) -> None:
        """Skip one value at `path` (("cells", 3, "source", 0) ...), recording source strings."""
        self.skip()
        start = self.i
        char = self.text[self.i]
        if char == "{":
            self.container("}", path, keyed=True)
        elif char == "[":
            self.container("]", path, keyed=False)
        elif char == '"':
            line, value = self.string()
            if len(path) >= 3 and path[0] == "cells" and isinstance(path[1], int) and path[2] == "source":
                self.sources.setdefault(path[1] + 1, []).append((line, value))
        else:
            _, end = _DECODER.raw_decode(self.text, self.i)
            self.advance_to(end)
        if len(path) == 3 and path[0] == "cells" and isinstance(path[1], int) and path[2] == "source":
            self.spans[path[1] + 1] = (start, self.i)

    def container(self, close: str, path: tuple, keyed: bool) -> None:
        self.i += 1
        index = 0
        while True:
            self.skip()
            if self.text[self.i] == close:
                self.i += 1
                return
            if self.text[self.i] == ",":
                self.i += 1
                continue
            key: object = index
            if keyed:
                _, key = self.string()
                self.skip()
                self.i += 1  # the colon
            # Only the `cells` list and each cell's `source` need their paths; deeper
            # values (outputs, metadata) are skipped under a path nothing matches.
            self.value(path + (key,) if len(path) < 3 else path + ("",))
            index += 1


def _scan(text: str) -> Optional[_Scanner]:
    scanner = _Scanner(text)
    try:
        scanner.value(())
    except (ValueError, IndexError, RecursionError):
        return None
    return scanner


def cell_source_spans(text: str) -> Optional[dict[int, tuple[int, int]]]:
    """For each cell (1-based among all cells), the (start, end) offsets in `text` of its
    `source` value, so a fix can rewrite that value and leave every other byte alone."""
    scanner = _scan(text)
    return scanner.spans if scanner is not None else None


def cell_file_lines(text: str) -> Optional[dict[int, list[int]]]:
    """For each cell (1-based among all cells), the file line of each of its source lines
    (0-based list index = line within the cell - 1). None when the text cannot be walked."""
    scanner = _scan(text)
    if scanner is None:
        return None
    out: dict[int, list[int]] = {}
    for cell, strings in scanner.sources.items():
        lines: list[int] = []
        pending = False  # the last string did not end its line: the next one continues it
        for line, value in strings:
            parts = value.split("\n")
            count = len(parts) - 1 + (1 if parts[-1] else 0)  # lines this string starts
            if pending and count:
                count -= 1  # its first part finishes a line already counted
            lines.extend([line] * count)
            pending = bool(parts[-1]) or (pending and not value)
        out[cell] = lines
    return out
