"""Output that a CI runner reads as commands.

The GitHub Actions runner takes any line of a step's stdout or stderr that starts with `::`
after leading whitespace (`::error ...::`, `::add-mask::`, `::stop-commands::`) as a workflow
command, and the legacy `##[command]` form anywhere in a line; the Azure Pipelines agent
takes `##vso[...]` (and `##[...]`) anywhere in a line. File names, messages and source lines
are the checked tree's, so none of them may make such a line. Rather than trusting every
call site, torchlint's own stdout and stderr are wrapped for the whole run
(`CommandSafeStream`): every line is neutralized on its way out, whatever wrote it. Only
the `github` and `azure` formats write commands (COMMAND_FORMATS), through `write_commands`,
after escaping their fields.

A neutralized line keeps its text: the first `:` of a leading `::` becomes `\\x3a`, and the
second `#` of `##[` or `##vso[` becomes `\\u0023`, in the escape style `printable` uses for
control characters. (A JSON line never starts with `::`, and `##` only occurs inside its
strings, where `\\u0023` decodes to the same text: JSON output stays valid and equal in
value.) XML output (`junit`) gets character references instead (`&#58;`, `&#35;`), which
decode to the same text in element content and attribute values."""

from __future__ import annotations

import re
import sys
from contextlib import contextmanager

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, IO, Iterator, Optional

# How the runner splits its input into lines (.NET ReadLine: \r\n, \r or \n).
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)")
_COMMAND_START = re.compile(r"^(\s*):(?=:)")  # .NET TrimStart() drops Unicode whitespace
LEGACY_COMMAND = re.compile(r"(?<=#)#(?=(?:vso)?\[)", re.IGNORECASE)  # the second `#` of `##[` / `##vso[`
_LEGACY = LEGACY_COMMAND
COMMAND_FORMATS = ("github", "azure")  # formats whose lines are CI commands by design
MARKUP_FORMATS = ("junit",)  # XML: escaped with character references


def neutralize(text: str, markup: bool = False) -> str:
    """`text` with no line that a CI runner would take for a command. `markup`: the text is
    XML, where only character references keep the value unchanged."""
    if ":" not in text and "#" not in text:
        return text
    colon, hash_ = ("&#58;", "&#35;") if markup else ("\\x3a", "\\u0023")
    out = []
    for line in _lines(text):
        if "#" in line:
            line = _LEGACY.sub(lambda m: hash_, line)
        out.append(_COMMAND_START.sub(lambda m: m.group(1) + colon, line, count=1))
    return "".join(out)


def _lines(text: str) -> list[str]:
    lines = _LINE.findall(text)
    rest = text[sum(map(len, lines)):]
    return lines + [rest] if rest else lines


class CommandSafeStream:
    """A text stream that passes whole lines through `neutralize`. A line is held until its
    line break arrives (or `finish`), so a command cannot be assembled from pieces written
    separately. No `buffer` attribute: nothing can write around the filter."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._pending = ""

    def write(self, text: str) -> int:
        if isinstance(text, (bytes, bytearray)) and text:
            # click.echo(bytes) on a stream without `buffer` writes the bytes here (shell
            # completion does): filtered as the text they are.
            return self.write(bytes(text).decode("utf-8", "replace")) and len(text)
        if not isinstance(text, str):  # click probes for a binary stream with write(b"")
            raise TypeError("write() argument must be str")
        data = self._pending + text
        end = max(data.rfind("\n"), data.rfind("\r")) + 1
        if end and data[end - 1] == "\r" and end == len(data):
            end -= 1  # a "\r" at the end may be the first half of "\r\n": keep it for now
        self._pending = data[end:]
        if end:
            self._stream.write(neutralize(data[:end]))
        return len(text)

    def write_commands(self, text: str) -> None:
        """Workflow commands the `github` renderer built, one escaped command per line."""
        self.finish()
        self._stream.write(text)

    def finish(self) -> None:
        """Write the last, unterminated line."""
        if self._pending:
            pending, self._pending = self._pending, ""
            self._stream.write(neutralize(pending))

    def flush(self) -> None:
        self._stream.flush()

    def isatty(self) -> bool:
        return self._stream.isatty()

    def fileno(self) -> int:
        return self._stream.fileno()

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> Optional[str]:
        return getattr(self._stream, "encoding", None)

    @property
    def errors(self) -> Optional[str]:
        return getattr(self._stream, "errors", None)

    @property
    def closed(self) -> bool:
        return bool(getattr(self._stream, "closed", False))

    @property
    def wrapped(self) -> IO[str]:
        return self._stream


@contextmanager
def guarded_streams() -> Iterator[None]:
    """sys.stdout and sys.stderr wrapped in CommandSafeStream for the duration."""
    saved = sys.stdout, sys.stderr
    if sys.stdout is not None and not isinstance(sys.stdout, CommandSafeStream):
        sys.stdout = CommandSafeStream(sys.stdout)  # type: ignore[assignment]
    if sys.stderr is not None and not isinstance(sys.stderr, CommandSafeStream):
        sys.stderr = CommandSafeStream(sys.stderr)  # type: ignore[assignment]
    try:
        yield
    finally:
        try:
            finish_streams()
        finally:
            sys.stdout, sys.stderr = saved


def finish_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, CommandSafeStream):
            stream.finish()


@contextmanager
def raw_streams() -> Iterator[None]:
    """The original streams, for output that is not a report: the language server's
    JSON-RPC, and the fixed source that `--fix -` hands back to an editor."""
    saved = sys.stdout, sys.stderr
    finish_streams()
    sys.stdout = _unwrap(sys.stdout)  # type: ignore[assignment]
    sys.stderr = _unwrap(sys.stderr)  # type: ignore[assignment]
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


def _unwrap(stream: Any) -> Any:
    return stream.wrapped if isinstance(stream, CommandSafeStream) else stream


def write_commands(text: str, err: bool = False) -> None:
    """Print the `github` format's workflow commands on stdout (stderr with `err`: the runner
    reads commands on both, and `torchlint run` leaves stdout to the program)."""
    stream: Any = sys.stderr if err else sys.stdout
    if isinstance(stream, CommandSafeStream):
        stream.write_commands(text)
        stream.flush()
    else:
        stream.write(text)
        stream.flush()
