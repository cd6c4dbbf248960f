"""What a freshly cloned repository, or a client, can make the language server do: publishing
stays linear in findings and document size, documents over max-file-size get one
diagnostic, an unopened URI is read only through the safe reader (a FIFO there does not
hang the server), and a clean shutdown exits 0."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("pygls")
from lsprotocol import types  # noqa: E402
from pygls.workspace import Workspace  # noqa: E402

from test_cli import write  # noqa: E402
from torchlint.language_server import TorchlintServer  # noqa: E402
from torchlint.lsp_code_actions import code_actions  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
LEGACY = "x = torch.symeig(3)  # é\n"  # one TL901 finding per line, and a non-ASCII character


class Recorder(TorchlintServer):
    """The server without a transport: what it would publish is kept."""

    def __init__(self, root: Path) -> None:
        super().__init__()
        self.protocol._workspace = Workspace(root.as_uri())
        self.sent: list[types.PublishDiagnosticsParams] = []
        self.logged: list[str] = []

    def text_document_publish_diagnostics(self, params: types.PublishDiagnosticsParams) -> None:  # type: ignore[override]
        self.sent.append(params)

    def window_log_message(self, params: types.LogMessageParams) -> None:  # type: ignore[override]
        self.logged.append(params.message)

    def open(self, uri: str, text: str) -> None:
        self.workspace.put_text_document(types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text))


def _cpu_seconds(action) -> float:
    """The least CPU time of three runs (CPU time: other processes on the machine do not count)."""
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        action()
        best = min(best, time.process_time() - start)
    return best


def test_publishing_diagnostics_is_linear_in_findings_and_document_size(tmp_path):
    server = Recorder(tmp_path)
    costs = []
    for scale in (1, 2, 4, 8):
        uri = (tmp_path / f"m{scale}.py").as_uri()
        server.open(uri, "import torch\n" + LEGACY * 500 * scale)
        server.lint(uri)
        findings = server.findings[uri]
        assert len(findings) == 500 * scale
        costs.append(_cpu_seconds(lambda uri=uri, findings=findings: server.publish(uri, findings)))
    # Linear: 8x the work costs about 8x; the quadratic conversion cost 64x.
    assert costs[3] / max(costs[0], 1e-4) < 24, costs


def test_positions_are_converted_in_the_clients_units(tmp_path):
    server = Recorder(tmp_path)
    uri = (tmp_path / "m.py").as_uri()
    server.open(uri, "import torch\n# \f\ns = '𝒳'; x = torch.symeig(3)\n")
    server.lint(uri)
    [diagnostic] = server.sent[-1].diagnostics
    # UTF-16: the astral character counts twice; a form feed does not end a line.
    assert (diagnostic.range.start.line, diagnostic.range.start.character) == (2, 14)
    from torchlint.lsp_positions import DocumentIndex

    index = DocumentIndex(server.workspace.get_text_document(uri))
    assert index.from_client(types.Position(line=2, character=14)) == (2, 13)


def _whole_document_actions(server: Recorder, uri: str) -> list[types.CodeAction]:
    everything = types.Range(start=types.Position(line=0, character=0), end=types.Position(line=10**6, character=0))
    return code_actions(server, types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=everything,
        context=types.CodeActionContext(diagnostics=[])))


def test_code_actions_for_a_whole_document_tokenize_it_once(tmp_path, monkeypatch):
    import tokenize  # the document index reads comments and string rows through torchlint.noqa's scan

    calls = []
    real = tokenize.generate_tokens
    monkeypatch.setattr(tokenize, "generate_tokens", lambda *a: calls.append(1) or real(*a))
    server = Recorder(tmp_path)
    uri = (tmp_path / "m.py").as_uri()
    server.open(uri, "import torch\n" + LEGACY * 200 + "x = torch.symeig(3); s = '''\ntext\n'''\n")
    server.lint(uri)
    calls.clear()
    assert len(server.findings[uri]) == 201
    noqa = [a for a in _whole_document_actions(server, uri) if a.title.startswith("Disable")]
    assert len(calls) == 1
    assert len(noqa) == 200  # none for the finding whose line ends inside a string


def test_a_document_over_max_file_size_gets_one_diagnostic_not_a_lint(tmp_path):
    write(tmp_path, "pyproject.toml", "[tool.torchlint]\nmax-file-size = 4096\n")
    server = Recorder(tmp_path)
    uri = (tmp_path / "big.py").as_uri()
    server.open(uri, "import torch\n" + LEGACY * 400)
    server.lint(uri)
    [diagnostic] = server.sent[-1].diagnostics
    assert diagnostic.code == "TL000" and "max-file-size" in diagnostic.message
    server.open(uri, "import torch\n" + LEGACY * 10)
    server.lint(uri)
    assert len(server.sent[-1].diagnostics) == 10


def _in_thread(action, timeout: float = 10):
    result: list = []
    worker = threading.Thread(target=lambda: result.append(action()), daemon=True)
    worker.start()
    worker.join(timeout)
    return worker.is_alive(), result


def test_a_fifo_at_an_unopened_uri_does_not_hang_the_server(tmp_path):
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    server = Recorder(tmp_path)
    uri = fifo.as_uri()
    try:
        hung, _ = _in_thread(lambda: server.lint(uri))
        assert not hung, "linting an unopened FIFO blocked"
        [diagnostic] = server.sent[-1].diagnostics
        assert diagnostic.code == "TL000" and "not a regular file" in diagnostic.message
        from torchlint.lsp_code_actions import code_actions, hover

        position = types.Position(line=0, character=0)
        hung, result = _in_thread(lambda: (
            hover(server, types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=position)),
            code_actions(server, types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri), range=types.Range(start=position, end=position),
                context=types.CodeActionContext(diagnostics=[])))))
        assert not hung and result == [(None, [])]
    finally:
        with open(os.open(fifo, os.O_RDWR | os.O_NONBLOCK), "wb"):  # release a reader stuck on it
            pass


def test_an_unopened_uri_is_read_through_the_safe_reader(tmp_path):
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "env.py").symlink_to("/proc/self/environ")
    plain = write(tmp_path, "proj/plain.py", "import torch\n" + LEGACY)
    (tmp_path / "proj" / "out.py").symlink_to(write(tmp_path, "home/secret.py", "TOKEN = 'hunter2'\n("))
    server = Recorder(tmp_path / "proj")
    server.lint((tmp_path / "proj" / "env.py").as_uri())
    [refused] = server.sent[-1].diagnostics
    assert "system file" in refused.message and "PATH=" not in refused.message
    server.lint((tmp_path / "proj" / "out.py").as_uri())
    [refused] = server.sent[-1].diagnostics
    assert "outside" in refused.message and "hunter2" not in refused.message
    server.lint(plain.as_uri())  # a regular file the editor did not open: linted from disk
    assert [d.code for d in server.sent[-1].diagnostics] == ["TL901"]


def _frame(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


@pytest.mark.parametrize("shutdown, status", [(True, 0), (False, 1)])
def test_the_server_exits_0_after_shutdown_and_exit(tmp_path, shutdown, status):
    messages = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
                 "params": {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}}},
                {"jsonrpc": "2.0", "method": "initialized", "params": {}}]
    if shutdown:
        messages.append({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
    messages.append({"jsonrpc": "2.0", "method": "exit"})
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-m", "torchlint", "server"], input=b"".join(map(_frame, messages)),
                          capture_output=True, cwd=tmp_path, env=env, timeout=120)
    assert proc.returncode == status, proc.stderr.decode()
    assert b"cannot write" not in proc.stderr
    assert b'"id": 1' in proc.stdout.replace(b'"id":1', b'"id": 1')  # the initialize reply came through
