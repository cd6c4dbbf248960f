"""Terminal colour for the text formats: `--color auto|always|never`, honouring the
NO_COLOR (https://no-color.org) and FORCE_COLOR conventions like ruff does."""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO, Mapping, Optional

CHOICES = ("auto", "always", "never")


def use_color(choice: str, stream: Optional[IO[str]], env: Optional[Mapping[str, str]] = None) -> bool:
    """Whether to colour output written to `stream` (None: a file named by --output-file).
    An explicit --color always/never wins; in auto mode a non-empty NO_COLOR turns colour
    off, a non-empty FORCE_COLOR turns it on, otherwise colour follows "is a terminal"."""
    if choice == "always":
        return True
    if choice == "never":
        return False
    env = os.environ if env is None else env
    if env.get("NO_COLOR"):
        return False
    if env.get("FORCE_COLOR"):
        return True
    if stream is None:
        return False
    try:
        return stream.isatty() and env.get("TERM") != "dumb"
    except (AttributeError, ValueError):  # closed or a plain object
        return False


class Palette:
    """Styles for each part of a finding; every method is the identity when colour is off."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def _style(self, text: str, **style: object) -> str:
        if not self.enabled:
            return text
        import click  # only for colour: a plain run never imports click

        return click.style(text, **style)  # type: ignore[arg-type]

    def path(self, text: str) -> str:
        return self._style(text, bold=True)

    def code(self, text: str, severity: str = "warning") -> str:
        return self._style(text, fg="red" if severity == "error" else "yellow", bold=True)

    def gutter(self, text: str) -> str:
        return self._style(text, fg="blue", bold=True)

    def caret(self, text: str) -> str:
        return self._style(text, fg="red", bold=True)

    def help(self, text: str) -> str:
        return self._style(text, fg="cyan", bold=True)

    def summary(self, text: str, clean: bool) -> str:
        return self._style(text, fg="green" if clean else None, bold=True)


PLAIN = Palette(False)
