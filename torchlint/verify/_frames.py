"""Length-prefixed JSON frames on the worker's dedicated channel fd (stdlib only).

A frame is a 4-byte big-endian length, then that many bytes of UTF-8 JSON. The reader in
torchlint treats every frame as untrusted data (see runner.FrameReader)."""

from __future__ import annotations

import json
import os
import struct

MAX_FRAME = 1 << 16
CHANNEL_FD = 3  # where the launcher puts the channel for the worker


def encode(obj: object) -> bytes:
    data = json.dumps(obj).encode("utf-8")
    return struct.pack(">I", len(data)) + data


def send(fd: int, obj: object) -> None:
    view = memoryview(encode(obj))
    while view:
        view = view[os.write(fd, view):]
