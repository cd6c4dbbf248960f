"""The language server's stdin, as pygls' reader thread reads it (`readline` for headers,
`read(n)` for a body), which can also tell the event loop whether more input is waiting:
a lone edit is then linted at once, with no fixed wait, and one the client sent together
with others waits for them (debouncing by the messages queued, not by a sleep)."""

from __future__ import annotations

import os
import select
import sys
import threading

CHUNK = 1 << 16


class WatchedInput:
    """A file descriptor read in chunks into a buffer. `begun` counts the messages whose
    first line has been read, so the loop can ask whether a message has started arriving
    since the one it is handling (`waiting`). Only the reader thread reads; the loop only
    looks (under a lock: the buffer and the count change together)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._buffer = bytearray()
        self._lock = threading.Lock()
        self._at_message_start = True  # the next line read begins a message
        self.begun = 0

    def _fill(self) -> bool:
        """Read what the descriptor has (blocking until something or EOF); False at EOF."""
        chunk = os.read(self.fd, CHUNK)
        with self._lock:
            self._buffer += chunk
        return bool(chunk)

    def readline(self) -> bytes:
        """Up to and including the next b"\\n" (everything left at EOF), as a file's readline."""
        while True:
            with self._lock:
                end = self._buffer.find(b"\n")
                if end >= 0:
                    return self._take(end + 1, line=True)
            if not self._fill():
                with self._lock:
                    return self._take(len(self._buffer), line=True)

    def read(self, size: int) -> bytes:
        """`size` bytes (fewer at EOF), as a buffered file's read."""
        while True:
            with self._lock:
                if len(self._buffer) >= size:
                    return self._take(size, line=False)
            if not self._fill():
                with self._lock:
                    return self._take(len(self._buffer), line=False)

    def _take(self, size: int, line: bool) -> bytes:
        data = bytes(self._buffer[:size])
        del self._buffer[:size]
        if line and data:
            # Headers end at an empty line, and a body is read with `read`: a line read
            # after a body (or first) starts the next message.
            if self._at_message_start:
                self.begun += 1
            self._at_message_start = False
        elif data:
            self._at_message_start = True
        return data

    def waiting(self, since: int) -> bool:
        """Has input arrived beyond the `since`-th message: a message begun, bytes in the
        buffer, or bytes in the pipe? (The pipe is not looked at on Windows, where select
        takes sockets only: there a message counts once the reader thread has begun it.)"""
        with self._lock:
            if self.begun > since or self._buffer:
                return True
        if sys.platform == "win32":
            return False
        try:
            return bool(select.select([self.fd], [], [], 0)[0])
        except (OSError, ValueError):
            return False
