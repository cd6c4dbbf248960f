"""TL001: a `# noqa: TLxxx` that suppresses nothing (ruff's RUF100, for torchlint codes)."""

from __future__ import annotations

import re

from torchlint.checker import FileContext
from torchlint.edits import Fix, edit, make_fix
from torchlint.noqa import Directive, Suppression
from torchlint.rules import lazy
from torchlint.rules.base import Evidence, Rule, Violation

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional

_TL_CODE = re.compile(r"TL[0-9]{3}")


class UnusedNoqaDirective(Violation):
    codes: tuple[str, ...]  # the directive's codes that suppressed nothing
    unknown: bool  # none of them is a rule
    help = "Remove the unused code"

    def message(self) -> str:
        what = ", ".join(f"`{c}`" for c in self.codes)
        return f"Unused `noqa` directive: {what}{' (no such rule)' if self.unknown else ''}"


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
    x = torch.zeros(3, device="cuda")  # noqa: TL801, E501
    ```
    The line once read `torch.zeros(3).cuda()`; since the fix, TL801 has nothing to report there.

    ## Use instead
    ```python
    x = torch.zeros(3, device="cuda")  # noqa: E501
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
    evidence = Evidence(reason="a statement about this file's comments, not about torch: nothing to run")

    def check_noqa(self, ctx: FileContext, suppression: Suppression) -> None:
        # Only codes enabled for this file are judged: a rule left out by --select or
        # per-file-ignores might still need its noqa elsewhere.
        judged = ctx.enabled_codes
        known = lazy.static_codes()  # the generated index: the catalog would import every rule module
        for row, directive in sorted(suppression.directives.by_row.items()):
            codes = directive.code_set
            if codes is None:
                continue  # a bare noqa directive also silences other tools: not ours to judge
            unused = sorted(c for c in codes
                            if _TL_CODE.fullmatch(c) and (c not in known or c in judged)
                            and (row, c) not in suppression.used and c != self.code)
            if unused:
                self._report(ctx, directive, unused, known)

    def _report(self, ctx: FileContext, directive: Directive, unused: list[str], known: frozenset[str]) -> None:
        unknown = [c for c in unused if c not in known]
        row = directive.row
        self.report_range((row, directive.start + 1), (row, directive.end + 1),
                          UnusedNoqaDirective(codes=tuple(unused), unknown=bool(unknown) and len(unknown) == len(unused)),
                          fix=_removal(ctx.source.line(row), directive, set(unused)))


def _removal(line: str, directive: Directive, unused: set[str]) -> Optional[Fix]:
    assert directive.codes is not None
    row, start, end = directive.row, directive.start, directive.end
    keep = [c.text for c in directive.codes if c.code not in unused]
    if keep:
        a, b = directive.codes[0].start, directive.codes_end
        return make_fix("Remove the unused codes", [edit((row, a + 1), (row, b + 1), ", ".join(keep))])
    rest = line[end:]
    if rest.strip():  # `# noqa: TL101 because ...`: keep the rest of the comment
        after = len(rest) - len(rest.lstrip())
        # `# noqa: TL101  # other` -> `# other`; `# noqa: TL101 note` -> `# note`
        remainder = "" if rest.lstrip().startswith("#") else "# "
        return make_fix("Remove the unused `noqa` directive",
                        [edit((row, start + 1), (row, end + after + 1), remainder)])
    before = len(line[:start]) - len(line[:start].rstrip())
    return make_fix("Remove the unused `noqa` directive", [edit((row, start - before + 1), (row, len(line) + 1), "")])
