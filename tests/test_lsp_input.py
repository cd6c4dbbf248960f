"""The server's stdin (lsp_input.WatchedInput): it reads messages as pygls reads them
(`readline` for the headers, `read(n)` for the body) and tells whether more input waits
behind a message; a lone edit with more waiting waits one tick, one without is linted at once."""

from __future__ import annotations

import asyncio
import os
import sys
import threading

import pytest

pytest.importorskip("pygls")

from test_cli import BAD  # noqa: E402
from test_language_server_editing import _change, _server  # noqa: E402
from torchlint.language_server import QUICK_SECONDS  # noqa: E402
from torchlint.lsp_input import WatchedInput  # noqa: E402


def _message(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _read_message(source: WatchedInput) -> bytes:
    header = source.readline()
    assert source.readline() == b"\r\n"
    return source.read(int(header.split(b":")[1]))


@pytest.fixture
def pipe():
    read_end, write_end = os.pipe()
    yield read_end, write_end
    for fd in (read_end, write_end):
        try:
            os.close(fd)
        except OSError:
            pass


def test_messages_read_back_whole_and_in_order(pipe):
    read_end, write_end = pipe
    bodies = [b'{"a": 1}', b"x" * 200_000, b'{"line": "\\n"}']  # one longer than the pipe and a chunk
    data = b"".join(_message(b) for b in bodies)
    writer = threading.Thread(target=lambda: [os.write(write_end, data[i:i + 4096]) for i in range(0, len(data), 4096)])
    writer.start()
    source = WatchedInput(read_end)
    assert [_read_message(source) for _ in bodies] == bodies
    writer.join()
    os.close(write_end)
    assert source.readline() == b"" and source.read(5) == b""  # EOF, as a file reads it
    assert source.begun == len(bodies)


@pytest.mark.skipif(sys.platform == "win32", reason="select takes sockets only on Windows")
def test_waiting_sees_the_next_message_in_the_pipe_buffer_or_begun(pipe):
    read_end, write_end = pipe
    source = WatchedInput(read_end)
    os.write(write_end, _message(b"first"))
    assert _read_message(source) == b"first" and source.begun == 1
    assert not source.waiting(1)  # nothing behind it
    os.write(write_end, _message(b"second"))
    assert source.waiting(1)  # in the pipe, unread
    source.readline()  # the reader thread has begun it (the rest is in the buffer)
    assert source.begun == 2 and source.waiting(1)
    source.readline(), source.read(6)
    assert not source.waiting(2) and source.waiting(1)


class _Waiting:
    begun = 1

    def __init__(self, answer: bool) -> None:
        self.answer = answer

    def waiting(self, since: int) -> bool:
        return self.answer


@pytest.mark.parametrize("waiting", [False, True])
def test_a_lone_edit_waits_a_tick_only_when_more_input_waits(tmp_path, monkeypatch, waiting):
    monkeypatch.chdir(tmp_path)
    server = _server(tmp_path)
    server.incoming = _Waiting(waiting)  # type: ignore[assignment]
    uri = (tmp_path / "train.py").as_uri()
    server.open(uri, "import torch\n")

    async def edit() -> None:
        loop = asyncio.get_running_loop()
        _change(server, uri, 2, BAD)
        assert server.pending[uri].when() <= loop.time()  # no fixed wait
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        if waiting:  # rescheduled one tick later, nothing published yet
            assert not server.sent and 0 < server.pending[uri].when() - loop.time() <= QUICK_SECONDS
            while uri in server.pending:
                await asyncio.sleep(QUICK_SECONDS)
        assert len(server.sent) == 1 and uri not in server.pending

    asyncio.run(edit())
