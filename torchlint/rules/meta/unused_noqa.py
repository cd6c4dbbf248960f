"""TL001: a `# noqa: TLxxx` that suppresses nothing (ruff's RUF100, for torchlint codes)."""

from __future__ import annotations

import re
from typing import Optional

from torchlint.checker import FileContext
from torchlint.fix.edits import edit, make_fix
from torchlint.rules.base import Evidence, Rule
from torchlint.source import ALL_CODES, CODE_SPLIT, _comment_part

_DIRECTIVE = re.compile(r"#\s*noqa:\s?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*)", re.IGNORECASE)
_TL_CODE = re.compile(r"TL[0-9]{3}")


class UnusedNoqa(Rule):
    """## What it does
    Flags a `# noqa: TLxxx` comment whose torchlint codes suppress nothing on that line: the
    rule named is enabled for the file and did not fire there, or no torchlint rule has that
    code. Like ruff's `RUF100`, it is opt-in: `--extend-select TL001`.

    Only `TL` codes are judged. Other tools' codes in the same comment (`E501`, `B008`) and a
    bare `# noqa` (which silences every tool) are never reported, and a code whose rule is not
    enabled for the file (left out by `select`, `ignore` or `per-file-ignores`) is not judged.

    ## Why is this bad?
    A stale suppression hides the next real finding on that line, and tells readers the line has
    a problem it no longer has.

    ## Example
    ```python
    x = torch.zeros(3)  # noqa: TL801, E501
    ```

    ## Use instead
    ```python
    x = torch.zeros(3)  # noqa: E501
    ```

    ## Fix safety
    Safe. The fix removes only the unused `TL` codes; other codes stay, and the whole directive
    goes only when nothing else is left in it (text after the codes is kept as a comment).

    ## References
    - [ruff: unused-noqa (RUF100)](https://docs.astral.sh/ruff/rules/unused-noqa/)
    """

    code = "TL001"
    name = "unused-noqa"
    summary = "Unused `noqa` directive: a torchlint code on a line where nothing is suppressed"
    severity = "warning"
    default_enabled = False  # like ruff's RUF100: opt in with --extend-select TL001
    tags = ("maintainability",)
    precision = "very-high"
    requires_text = ("noqa", "NOQA", "Noqa")
    runs_last = True
    evidence = Evidence(reason="a statement about this file's comments, not about torch: nothing to run")

    def end_file(self, ctx: FileContext) -> None:
        source = ctx.source
        # Only codes enabled for this file are judged: a rule left out by --select or
        # per-file-ignores might still need its noqa elsewhere.
        judged = ctx.enabled_codes
        # Imported here: the catalog imports every rule module, this one included.
        from torchlint.catalog import static_codes

        known = static_codes()
        for row, codes in sorted(source.noqa_rows().items()):
            if codes is ALL_CODES:
                continue  # a bare noqa directive also silences other tools: not ours to judge
            unused = [c for c in codes
                      if _TL_CODE.fullmatch(c) and (c not in known or c in judged)
                      and (row, c) not in source.noqa_hits and c != self.code]
            if unused:
                self._report(ctx, row, sorted(unused), known)

    def _report(self, ctx: FileContext, row: int, unused: list[str], known: frozenset[str]) -> None:
        line = ctx.source.line(row)
        comment = _comment_part(line)
        match = _DIRECTIVE.search(comment) if comment else None
        if comment is None or match is None:
            return
        offset = len(line) - len(comment)
        start, end = offset + match.start(), offset + match.end()
        unknown = [c for c in unused if c not in known]
        what = ", ".join(f"`{c}`" for c in unused)
        detail = " (no such rule)" if unknown and len(unknown) == len(unused) else ""
        message = f"Unused `noqa` directive: {what}{detail}"
        if ctx.source.is_suppressed(self.code, row):
            return
        self.ctx.findings.append(_finding(self, ctx, row, start, end, message,
                                          _removal(row, line, comment, offset, match, set(unused))))


def _removal(row: int, line: str, comment: str, offset: int, match: re.Match, unused: set[str]) -> dict:
    codes = [c for c in CODE_SPLIT.split(match.group("codes").strip()) if c]
    keep = [c for c in codes if c.upper() not in unused]
    if keep:
        a, b = offset + match.start("codes"), offset + match.end("codes")
        return make_fix("Remove the unused codes", [edit((row, a + 1), (row, b + 1), ", ".join(keep))])
    start, end = offset + match.start(), offset + match.end()
    rest = line[end:]
    if rest.strip():  # `# noqa: TL101 because ...`: keep the rest of the comment
        after = len(rest) - len(rest.lstrip())
        # `# noqa: TL101  # other` -> `# other`; `# noqa: TL101 note` -> `# note`
        remainder = "" if rest.lstrip().startswith("#") else "# "
        return make_fix("Remove the unused `noqa` directive",
                        [edit((row, start + 1), (row, end + after + 1), remainder)])
    before = len(line[:start]) - len(line[:start].rstrip())
    return make_fix("Remove the unused `noqa` directive", [edit((row, start - before + 1), (row, len(line) + 1), "")])


def _finding(rule: Rule, ctx: FileContext, row: int, start: int, end: int, message: str, fix: Optional[dict]):  # type: ignore[no-untyped-def]
    from torchlint.diagnostics import Finding

    return Finding(code=rule.code, name=rule.name, message=message, path=ctx.source.path, row=row,
                   col=start + 1, end_row=row, end_col=end + 1, severity=rule.severity, fix=fix,
                   help="Remove the unused code")
