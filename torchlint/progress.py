"""ruff's progress line: "Checked N/M files" on stderr, overwritten in place, once a run has
taken over a second, and cleared when it ends. Only on a terminal: a pipe, a file, a CI log
or `-q` never gets it, so nothing that parses stderr ever sees it."""

from __future__ import annotations

import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO, Optional

DELAY = 1.0  # seconds of silence before the line appears (fast runs never show it)
INTERVAL = 0.1  # at most ten redraws a second
CLEAR = "\r\x1b[2K"  # back to the start of the line, then erase it


class Progress:
    """A callable `(done, total)` for `run_tasks`; `close()` erases what it drew."""

    def __init__(self, stream: Optional[IO[str]], delay: Optional[float] = None) -> None:
        # The raw stream, not the workflow-command filter around it (output/ci_safe.py), which
        # holds back a line until it ends: this line never ends, and it is only our own text.
        self._stream = getattr(stream, "wrapped", stream)
        self._start = time.monotonic()
        self._delay = DELAY if delay is None else delay
        self._last = -1.0
        self._shown = False

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if self._stream is None or now - self._start < self._delay:
            return
        if done < total and now - self._last < INTERVAL:
            return
        self._last = now
        try:
            self._stream.write(f"{CLEAR}Checked {done}/{total} files")
            self._stream.flush()
            self._shown = True
        except (OSError, ValueError):
            self._stream = None  # a terminal gone away must not stop the run

    def close(self) -> None:
        if self._shown and self._stream is not None:
            try:
                self._stream.write(CLEAR)
                self._stream.flush()
            except (OSError, ValueError):
                pass
        self._shown = False


def progress_for(quiet: bool, stream: Optional[IO[str]] = None) -> Progress:
    """A progress line on `stream` (default: stderr) when it is a terminal and not `-q`;
    otherwise one that draws nothing."""
    stream = sys.stderr if stream is None else stream
    try:
        tty = stream is not None and stream.isatty()
    except (OSError, ValueError):
        tty = False
    return Progress(stream if tty and not quiet else None)
