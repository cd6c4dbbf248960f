"""`# noqa` directives, parsed once per file, and the one suppression pass.

Every reader of directives goes through here: the checker's suppression pass (after all
rules), TL001 (unused directives), `--add-noqa` and the language server's code action
and hover. Rows are the parser's: a line ends only at \\n, \\r\\n or a lone \\r, never at a
form feed or U+2028 (`str.splitlines()` would move a comment to another row)."""

from __future__ import annotations

import re
from functools import lru_cache

from torchlint.fast_dataclass import dataclass, field
from torchlint.source import physical_lines, tokenizer_readline

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterable, Optional
    from torchlint.diagnostics import Finding


@lru_cache(maxsize=1)
def _directive_patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """(file-level, line) directive patterns, compiled when a file first mentions noqa.

    A line directive: a bare one (every code) or one naming codes after a colon, like ruff and
    case-insensitive. Codes of other tools (E501, B008) in the same comment are kept but never
    match a TL code. File-level suppression, all codes or the codes listed: torchlint's own
    directive and flake8's file-level one, which ruff honours too (flake8 itself skips such a
    file, TL codes included). Spelled out in the README, not here: this text would match itself."""
    line = re.compile(r"#\s*noqa(?::[\s]?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
    file_level = re.compile(
        r"#\s*(?:torchlint|flake8)\s*:\s*noqa(?::\s?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?",
        re.IGNORECASE)
    return file_level, line


_CODE = re.compile(r"[^,\s]+")


def _mentions_noqa(text: str) -> bool:
    """`noqa` in any case. A lowered copy and a substring search is ~4x faster than a
    case-insensitive regex search; no other character lowers to n, o, q or a, so the two
    agree."""
    return "noqa" in text or "noqa" in text.lower()


@dataclass(frozen=True)
class CodeSpan:
    """One code of a directive as written, with its 0-based columns in the line."""

    text: str  # as spelled in the comment
    start: int
    end: int

    @property
    def code(self) -> str:
        return self.text.upper()


@dataclass(frozen=True)
class Directive:
    """One `# noqa` (line) or `# torchlint: noqa` (file) directive; columns are 0-based
    code points in its line, `end` exclusive."""

    row: int
    start: int
    end: int
    file_level: bool
    codes: Optional[tuple[CodeSpan, ...]]  # None: a bare directive, every code
    codes_end: int = 0  # where the code list ends (bare: unused)

    @property
    def code_set(self) -> Optional[frozenset[str]]:
        return None if self.codes is None else frozenset(c.code for c in self.codes)

    def names(self, code: str) -> bool:
        return self.codes is None or any(c.code == code for c in self.codes)


@dataclass(frozen=True)
class TokenScan:
    """What one tokenizer pass tells about comments: the comments themselves, the rows that
    end inside a multi-line string (a comment there would be text), and how far it got."""

    comments: tuple[tuple[int, int, str], ...]  # (row, 0-based column, text)
    string_rows: frozenset[int]
    reached: int  # the last row a token started on
    complete: bool  # False: the tokenizer gave up (unfinished code), `reached` says where

    def comment_allowed_at_end(self, row: int) -> bool:
        # An unfinished statement at or before `row`: do not guess; one further down does not matter.
        return row not in self.string_rows and (self.complete or row < self.reached)


def scan(text: str, lines: Optional[list[str]] = None) -> TokenScan:
    """Tokenize `text` once. Source the tokenizer rejects (reported as TL000) still gets its
    comments, from a line scan that skips quoted text on the same line."""
    comments: list[tuple[int, int, str]] = []
    string_rows: set[int] = set()
    reached = 0
    import tokenize  # here: a file no directive can touch is never tokenized

    fstring_middle = getattr(tokenize, "FSTRING_MIDDLE", -1)
    try:
        for tok in tokenize.generate_tokens(tokenizer_readline(text)):
            if tok.type == tokenize.COMMENT:
                comments.append((tok.start[0], tok.start[1], tok.string))
            elif tok.type in (tokenize.STRING, fstring_middle):
                string_rows.update(range(tok.start[0], tok.end[0]))
            reached = tok.start[0]
    except (tokenize.TokenError, SyntaxError, ValueError):
        lines = physical_lines(text) if lines is None else lines
        comments = [(row, len(line) - len(c), c) for row, line in enumerate(lines, 1)
                    if "#" in line and (c := comment_part(line)) is not None]
        return TokenScan(tuple(comments), frozenset(string_rows), reached, False)
    return TokenScan(tuple(comments), frozenset(string_rows), reached, True)


@dataclass(frozen=True)
class Directives:
    """Every directive of one file."""

    by_row: dict[int, Directive] = field(default_factory=dict)  # line directives
    file_level: tuple[Directive, ...] = ()
    file_all: bool = False
    file_codes: frozenset[str] = frozenset()

    def on_row(self, row: int) -> list[Directive]:
        """The directives written on `row`, line and file level (for hover)."""
        found = [d for d in self.file_level if d.row == row]
        if row in self.by_row:
            found.append(self.by_row[row])
        return found

    def file_suppresses(self, code: str) -> bool:
        return self.file_all or code in self.file_codes


NO_DIRECTIVES = Directives()


def parse(text: str, lines: Optional[list[str]] = None, tokens: Optional[TokenScan] = None) -> Directives:
    """The directives of a file (only real comments: a `# noqa` in a string is text)."""
    if tokens is None and not _mentions_noqa(text):
        return NO_DIRECTIVES
    by_row: dict[int, Directive] = {}
    file_level: list[Directive] = []
    file_directive, line_directive = _directive_patterns()
    for row, col, comment in (tokens or scan(text, lines)).comments:
        if "noqa" not in comment.lower():
            continue
        m = file_directive.search(comment)
        if m:
            file_level.append(_directive(row, col, m, file_level=True))
            continue
        m = line_directive.search(comment)
        if m:
            by_row[row] = _directive(row, col, m, file_level=False)
    codes = {c.code for d in file_level if d.codes is not None for c in d.codes}
    return Directives(by_row, tuple(file_level), any(d.codes is None for d in file_level), frozenset(codes))


def may_suppress(text: str, lines: list[str], rows: Iterable[int]) -> bool:
    """Could a directive of this text suppress a finding on one of `rows`? False only when
    no file-level directive is spelled anywhere in the text and no line of `rows` mentions
    noqa: every real directive is a comment, and a comment is text of its own line, so
    `parse` would find nothing that suppresses them. Much cheaper than `parse`, which
    tokenizes the whole file to tell comments from strings."""
    if not _mentions_noqa(text):
        return False
    if _directive_patterns()[0].search(text):
        return True
    return any(0 < row <= len(lines) and "noqa" in lines[row - 1].lower() for row in rows)


def _directive(row: int, col: int, m: re.Match, file_level: bool) -> Directive:
    start, end = col + m.start(), col + m.end()
    if not m.group("codes"):
        return Directive(row, start, end, file_level, None)
    offset = col + m.start("codes")
    spans = tuple(CodeSpan(c.group(), offset + c.start(), offset + c.end()) for c in _CODE.finditer(m.group("codes")))
    return Directive(row, start, end, file_level, spans, col + m.end("codes"))


class Suppression:
    """The suppression pass over one file's findings. It remembers which (row, code) each
    line directive suppressed, which is what TL001 judges."""

    def __init__(self, directives: Directives) -> None:
        self.directives = directives
        self.used: set[tuple[int, str]] = set()

    def suppresses(self, code: str, row: int) -> bool:
        if self.directives.file_suppresses(code):
            return True
        directive = self.directives.by_row.get(row)
        if directive is not None and directive.names(code):
            self.used.add((row, code))
            return True
        return False

    def apply(self, findings: Iterable["Finding"]) -> list["Finding"]:
        """The findings no directive suppresses; a finding counts on its first row."""
        return [f for f in findings if not self.suppresses(f.code, f.row)]


def comment_part(line: str) -> Optional[str]:
    """The comment of a physical line, skipping '#' inside string literals (for source the
    tokenizer rejects)."""
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
