"""Glob patterns of `exclude`, `extend-exclude` and `per-file-ignores`, with ruff's meaning
(ruff compiles them with the `globset` crate): `*` and `?` match any characters, `/`
included (globset's default); `**` as a whole path segment matches any number of segments,
none included, so `src/**/*.py` matches `src/a.py` and `**/tests/*` matches `tests/a.py`;
`{a,b}` is either; `[abc]`, `[!abc]` and `[^abc]` are classes; `\\x` is a literal `x`.
fnmatch, which torchlint used before, has no `**` and no braces: its `src/**/*.py` needs a
directory between `src/` and the file, so a copied ruff config selected other files."""

from __future__ import annotations

import re


def translate(pattern: str) -> str:
    """A regular expression (not anchored) matching what the glob matches."""
    segments = pattern.split("/")
    pieces = []
    for k, segment in enumerate(segments):
        last = k == len(segments) - 1
        if segment == "**":
            pieces.append(".*" if last else "(?:.*/)?")
        else:
            pieces.append(_segment(segment) + ("" if last else "/"))
    return "".join(pieces)


def _segment(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch == "*":
            while i + 1 < len(text) and text[i + 1] == "*":
                i += 1  # `a**b` within a segment is `a*b`
            out.append(".*")
        elif ch == "?":
            out.append(".")
        elif ch == "\\" and i + 1 < len(text):
            i += 1
            out.append(re.escape(text[i]))
        elif ch == "[" and (end := _class_end(text, i)) > 0:
            body = text[i + 1:end]
            negate = body[:1] in ("!", "^")
            body = body[1:] if negate else body
            out.append("[" + ("^" if negate else "") + body.replace("\\", "\\\\").replace("[", "\\[") + "]")
            i = end
        elif ch == "{" and (end := _brace_end(text, i)) > 0:
            out.append("(?:" + "|".join(_segment(alt) for alt in _alternatives(text[i + 1:end])) + ")")
            i = end
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


def _class_end(text: str, start: int) -> int:
    """The index of the `]` closing the class opened at `start`, or -1 (then `[` is literal)."""
    i = start + 1
    if i < len(text) and text[i] in "!^":
        i += 1
    if i < len(text) and text[i] == "]":
        i += 1  # `[]a]`: a leading `]` is a member
    end = text.find("]", i)
    return end


def _brace_end(text: str, start: int) -> int:
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return i
    return -1


def _alternatives(body: str) -> list[str]:
    """`a,b{c,d}` -> ["a", "b{c,d}"]: the commas at the top level only."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in body:
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        depth += (ch == "{") - (ch == "}")
        current.append(ch)
    parts.append("".join(current))
    return parts
