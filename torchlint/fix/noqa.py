"""`--add-noqa`: append `# noqa: TLxxx` to each finding's line, merging with a noqa
comment already there. Lines where a comment cannot go (inside a multi-line string, after
a backslash continuation) are skipped and counted."""

from __future__ import annotations

from collections import defaultdict

from torchlint import noqa
from torchlint.diagnostics import Finding
from torchlint.source import LINE_BREAK, split_lines


def add_noqa(text: str, findings: list[Finding]) -> tuple[str, int, int]:
    """(new text, directives added, findings whose line cannot take a comment)."""
    by_row: dict[int, set[str]] = defaultdict(set)
    for f in findings:
        by_row[f.row].add(f.code)
    lines = split_lines(text)
    breaks = LINE_BREAK.findall(text)
    tokens = noqa.scan(text)
    directives = noqa.parse(text, lines, tokens)
    added = skipped = 0
    for row, codes in sorted(by_row.items()):
        if row > len(lines):
            continue
        line = lines[row - 1]
        if row in tokens.string_rows or line.rstrip().endswith("\\"):
            skipped += len(codes)
            continue
        directive = directives.by_row.get(row)
        if directive is not None and directive.codes is None:
            continue  # a bare directive already suppresses everything
        if directive is not None:
            new = sorted(codes - (directive.code_set or frozenset()))
            if not new:
                continue
            at = directive.codes_end
            lines[row - 1] = line[:at] + ", " + ", ".join(new) + line[at:]
        else:
            lines[row - 1] = line.rstrip() + "  # noqa: " + ", ".join(sorted(codes))
        added += 1
    out = []
    for i, line in enumerate(lines):
        out.append(line)
        if i < len(breaks):
            out.append(breaks[i])
    return "".join(out), added, skipped
