"""A fix is a list of text edits plus an applicability (`torchlint.records.Fix`, written as
ruff's JSON `fix`), with 1-based rows and 1-based code-point columns (end exclusive).
Rules build fixes from AST nodes with the helpers here; nothing here imports LibCST."""

from __future__ import annotations

import ast

from torchlint.records import APPLICABILITIES, SAFE, UNSAFE, Edit, Fix
from torchlint.source import line_starts

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional
    from torchlint.source import SourceFile

__all__ = ["APPLICABILITIES", "SAFE", "UNSAFE", "Edit", "Fix", "add_keyword", "edit", "end_of", "has_comment",
           "insert_at", "make_fix", "module_alias", "replace", "start_of", "text_of"]


def start_of(source: "SourceFile", node: ast.AST) -> tuple[int, int]:
    return node.lineno, source.to_col(node.lineno, node.col_offset)  # type: ignore[attr-defined]


def end_of(source: "SourceFile", node: ast.AST) -> tuple[int, int]:
    row = node.end_lineno  # type: ignore[attr-defined]
    return row, source.to_col(row, node.end_col_offset)  # type: ignore[attr-defined]


def edit(start: tuple[int, int], end: tuple[int, int], content: str) -> Edit:
    return Edit(start, end, content)


def replace(source: "SourceFile", node: ast.AST, content: str) -> Edit:
    return edit(start_of(source, node), end_of(source, node), content)


def insert_at(position: tuple[int, int], content: str) -> Edit:
    return edit(position, position, content)


def _line_starts(source: "SourceFile") -> list[int]:
    starts = getattr(source, "_line_starts", None)
    if starts is None:
        starts = line_starts(source.text)
        source._line_starts = starts  # type: ignore[attr-defined]  # cached for the file's other fixes
    return starts


def text_of(source: "SourceFile", node: ast.AST) -> str:
    """The node's exact source text (comments, formatting and line endings inside it
    included). Sliced from the text by cached line offsets: ast.get_source_segment splits
    the whole file on every call, which made fix-carrying files quadratic."""
    end_row = getattr(node, "end_lineno", None)
    if end_row is None:
        return ast.unparse(node)
    starts = _line_starts(source)
    begin = starts[node.lineno - 1] + source.to_col(node.lineno, node.col_offset) - 1  # type: ignore[attr-defined]
    end = starts[end_row - 1] + source.to_col(end_row, node.end_col_offset) - 1  # type: ignore[attr-defined]
    return source.text[begin:end]


def make_fix(message: str, edits: list[Edit], applicability: str = SAFE) -> Fix:
    return Fix(message, tuple(edits), applicability)


def add_keyword(source: "SourceFile", call: ast.Call, text: str) -> Optional[Edit]:
    """An edit appending `text` (`name=value`) as the call's last argument; None when the
    call ends in a way we do not rewrite (`**kwargs`)."""
    if any(kw.arg is None for kw in call.keywords):
        return None
    args: list[ast.AST] = [*call.args, *call.keywords]
    end_row, end_col = end_of(source, call)
    closing = (end_row, end_col - 1)  # the call's own `)`
    if not args:
        return insert_at(closing, text)
    last = max(args, key=lambda a: (a.end_lineno, a.end_col_offset))  # type: ignore[attr-defined]
    last_end = end_of(source, last)
    between = _slice(source, last_end, closing)
    if between is None:
        return None
    # Only whitespace, comments, commas and the closing parentheses of a parenthesised
    # last argument (`f(((a, b)))`) can sit between the last argument and the call's `)`.
    marks = [ch for line in between.split("\n") for ch in line.split("#", 1)[0] if ch in ",)"]
    if not marks:
        return insert_at(last_end, ", " + text)
    if marks == [","]:  # a trailing comma: `f(a,\n)` -> `f(a, text,\n)`
        comma = between.index(",")
        return insert_at(_advance(last_end, between[:comma + 1]), " " + text + ",")
    return insert_at(closing, (" " if marks[-1] == "," else ", ") + text)


def _slice(source: "SourceFile", start: tuple[int, int], end: tuple[int, int]) -> Optional[str]:
    lines = source.lines
    if start > end or end[0] > len(lines):
        return None
    if start[0] == end[0]:
        return lines[start[0] - 1][start[1] - 1:end[1] - 1]
    parts = [lines[start[0] - 1][start[1] - 1:]]
    parts.extend(lines[start[0]:end[0] - 1])
    parts.append(lines[end[0] - 1][:end[1] - 1])
    return "\n".join(parts)


def _advance(position: tuple[int, int], text: str) -> tuple[int, int]:
    row, col = position
    for ch in text:
        if ch == "\n":
            row, col = row + 1, 1
        else:
            col += 1
    return row, col


def module_alias(aliases: dict[str, str], module: str) -> Optional[str]:
    """The local name that `module` (`torch`, `torch.nn`) is imported under, if any; a fix
    spells new names through it (`T.float32` after `import torch as T`)."""
    for local, qualified in aliases.items():
        if qualified == module:
            return local
    if "." in module:
        parent, _, last = module.rpartition(".")
        base = module_alias(aliases, parent)
        return f"{base}.{last}" if base else None
    return None


def has_comment(text: str) -> bool:
    """A `#` outside string literals: replacing such text would lose a comment."""
    import io
    import tokenize

    try:
        return any(tok.type == tokenize.COMMENT for tok in tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return "#" in text
