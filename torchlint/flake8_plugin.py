"""flake8 plugin (entry point `TL` in the `flake8.extension` group): torchlint's rules,
codes and configuration inside flake8, for teams whose editors and CI already run it.

flake8 filters the findings further with its own --select/--ignore and `# noqa`; which
rules run at all, and their options, come from torchlint's config for each file, so
`flake8` and `torchlint check` report the same codes."""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

from torchlint import __version__
from torchlint.api import lint_document
from torchlint.diagnostics import INTERNAL_ERROR, SYNTAX_ERROR_CODE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterator


class TorchlintChecker:
    name = "torchlint"
    version = __version__

    def __init__(self, tree: ast.AST, filename: str, lines: list[str]) -> None:
        # flake8 parsed the file already (it reports E999 itself when it cannot), but rules
        # need torchlint's source model (code-point columns, noqa), so lint the text again.
        self.filename = filename
        self.lines = lines

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        data = _encode("".join(self.lines))
        path = Path(self.filename) if self.filename not in ("-", "stdin") else Path("stdin.py")
        try:
            findings = lint_document(path, data, display=self.filename)
        except Exception as exc:  # a rule bug must not abort the whole flake8 run
            yield 1, 0, (f"{INTERNAL_ERROR.code} torchlint internal error: {type(exc).__name__}: {exc}; "
                         "please report this"), type(self)
            return
        for f in findings:
            if f.code == SYNTAX_ERROR_CODE:
                continue  # flake8's E999 already reports the syntax error
            yield f.row, f.col - 1, f"{f.code} {f.message}", type(self)


def _encode(text: str) -> bytes:
    """flake8 hands over decoded lines; encode them back in the file's declared encoding
    (PEP 263 cookie), so torchlint decodes exactly the text flake8 read."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(text.encode("utf-8")).readline)
        return text.encode(encoding)
    except (SyntaxError, LookupError, UnicodeError):
        return text.encode("utf-8")
