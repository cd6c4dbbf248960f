"""`--add-noqa`: append `# noqa: TLxxx` to each finding's line, merging with a noqa
comment already there. Lines where a comment cannot go (inside a multi-line string, after
a backslash continuation) are skipped and counted."""

from __future__ import annotations

import re
import tokenize
from collections import defaultdict

from torchlint.diagnostics import Finding
from torchlint.source import LINE_BREAK, split_lines, tokenizer_readline
from torchlint.source import NOQA_RE, _comment_part



def _rows_inside_strings(text: str) -> set[int]:
    """Rows that end inside a multi-line string token (a comment there would be text)."""
    rows: set[int] = set()
    try:
        for tok in tokenize.generate_tokens(tokenizer_readline(text)):
            if tok.type == tokenize.STRING or getattr(tokenize, "FSTRING_MIDDLE", -1) == tok.type:
                rows.update(range(tok.start[0], tok.end[0]))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    return rows


def add_noqa(text: str, findings: list[Finding]) -> tuple[str, int, int]:
    """(new text, directives added, findings whose line cannot take a comment)."""
    by_row: dict[int, set[str]] = defaultdict(set)
    for f in findings:
        by_row[f.row].add(f.code)
    lines = split_lines(text)
    breaks = LINE_BREAK.findall(text)
    blocked = _rows_inside_strings(text)
    added = skipped = 0
    for row, codes in sorted(by_row.items()):
        if row > len(lines):
            continue
        line = lines[row - 1]
        if row in blocked or line.rstrip().endswith("\\"):
            skipped += len(codes)
            continue
        comment = _comment_part(line)
        match = NOQA_RE.search(comment) if comment else None
        if match is not None and not match.group("codes"):
            continue  # a bare `# noqa` already suppresses everything
        if match is not None:
            have = re.split(r"[,\s]+", match.group("codes").strip())
            new = sorted(codes - {c.upper() for c in have})
            if not new:
                continue
            start = len(line) - len(comment) + match.end("codes")  # type: ignore[arg-type]
            lines[row - 1] = line[:start] + ", " + ", ".join(new) + line[start:]
        else:
            lines[row - 1] = line.rstrip() + "  # noqa: " + ", ".join(sorted(codes))
        added += 1
    out = []
    for i, line in enumerate(lines):
        out.append(line)
        if i < len(breaks):
            out.append(breaks[i])
    return "".join(out), added, skipped
