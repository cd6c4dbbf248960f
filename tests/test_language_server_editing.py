"""The editor loop, in-process (no transport, no server start-up): a burst of edits is
published once, with the last text's findings; a lone edit is linted without the typing
debounce; a saved import target re-lints the open documents that read it through the project
index; and what the server publishes equals `torchlint check` of the same text, edit after edit."""

from __future__ import annotations

import asyncio
import gc
import shutil
import time
from pathlib import Path

import pytest

pytest.importorskip("pygls")
from lsprotocol import types  # noqa: E402

from test_cli import BAD  # noqa: E402
from test_language_server_limits import Recorder  # noqa: E402
from torchlint import catalog  # noqa: E402
from torchlint.api import CheckRequest, check  # noqa: E402
from torchlint.language_server import DEBOUNCE_SECONDS, QUICK_SECONDS, register_documents  # noqa: E402

FIXTURES = Path(__file__).resolve().parent / "fixtures"
ATTRIBUTE = catalog.by_name()["unregistered-tensor-attribute"].code  # asks the index: is Net an nn.Module?
MODULES = FIXTURES / ATTRIBUTE / "projects" / "modules_across_files"


def _server(root: Path) -> Recorder:
    server = Recorder(root)
    register_documents(server)
    return server


def _notify(server: Recorder, method: str, params: object) -> None:
    server.protocol.fm.features[method](params)  # pygls passes the server itself


def _change(server: Recorder, uri: str, version: int, text: str) -> None:
    """What pygls does with a didChange: update the workspace's copy, then call the feature."""
    params = types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)])
    server.workspace.update_text_document(params.text_document, params.content_changes[0])
    _notify(server, types.TEXT_DOCUMENT_DID_CHANGE, params)


def _published(server: Recorder, uri: str) -> list[types.PublishDiagnosticsParams]:
    return [p for p in server.sent if p.uri == uri]


def _check(root: Path, name: str) -> list[tuple[int, int, str, str]]:
    report = check(CheckRequest([name], cwd=root, no_cache=True))
    return [(f.row, f.col, f.code, f.message) for f in report.findings]


def _linted(server: Recorder, uri: str) -> list[tuple[int, int, str, str]]:
    return [(f.row, f.col, f.code, f.message) for f in server.findings[uri]]


def _diagnostics(params: types.PublishDiagnosticsParams) -> list[tuple[int, int, str]]:
    return [(d.range.start.line + 1, d.range.start.character + 1, str(d.code)) for d in params.diagnostics]


def test_a_burst_of_edits_is_published_once_with_the_last_texts_findings(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    server = _server(tmp_path)
    uri = (tmp_path / "train.py").as_uri()
    server.open(uri, "import torch\n")
    texts = [BAD + "#" * k + "\n" for k in range(5)] + [BAD + "x = torch.symeig(3)\n"]

    async def type_then_pause() -> None:
        loop = asyncio.get_running_loop()
        _change(server, uri, 2, texts[0])
        # A lone edit waits one tick, not the typing debounce.
        assert server.pending[uri].when() - loop.time() <= QUICK_SECONDS
        for version, text in enumerate(texts[1:], 3):
            _change(server, uri, version, text)  # within the same tick: typing
        assert server.pending[uri].when() - loop.time() > QUICK_SECONDS
        while uri in server.pending:
            await asyncio.sleep(DEBOUNCE_SECONDS / 4)
        await asyncio.sleep(2 * DEBOUNCE_SECONDS)  # nothing else is published later

    asyncio.run(type_then_pause())
    published = _published(server, uri)
    assert len(published) == 1 and published[0].version == len(texts) + 1
    (tmp_path / "train.py").write_text(texts[-1])
    assert _linted(server, uri) == _check(tmp_path, "train.py")
    assert _diagnostics(published[0]) == [(row, col, code) for row, col, code, _ in _linted(server, uri)]
    assert "TL901" in {code for _, _, code in _diagnostics(published[0])}  # the last text's symeig


def test_a_saved_import_target_re_lints_the_documents_that_import_it(tmp_path, monkeypatch):
    root = tmp_path / "project"
    shutil.copytree(MODULES, root)
    (root / "torchlint.toml").write_text(f'extend-select = ["{ATTRIBUTE}"]\n')  # off by default
    monkeypatch.chdir(root)
    server = _server(root)
    net, base, deep = (root / "models" / n for n in ("net.py", "base.py", "deep.py"))
    for path in (net, base, deep):
        server.open(path.as_uri(), path.read_text())
        _notify(server, types.TEXT_DOCUMENT_DID_OPEN, types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
            uri=path.as_uri(), language_id="python", version=1, text=path.read_text())))
    assert (12, ATTRIBUTE) in {(row, code) for row, _, code in _diagnostics(_published(server, net.as_uri())[-1])}
    before = {p.as_uri(): len(_published(server, p.as_uri())) for p in (net, deep)}

    base.write_text("class Base:\n    pass\n")  # no longer a LightningModule: Net is no Module
    _notify(server, types.TEXT_DOCUMENT_DID_SAVE, types.DidSaveTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=base.as_uri())))
    assert len(_published(server, net.as_uri())) == before[net.as_uri()] + 1  # re-linted: it imports base.py
    assert len(_published(server, deep.as_uri())) == before[deep.as_uri()]  # its chain does not go through base.py
    assert _linted(server, net.as_uri()) == _check(root, "models/net.py")
    assert (12, ATTRIBUTE) not in {(row, code) for row, _, code in _diagnostics(_published(server, net.as_uri())[-1])}


def _edit(server: Recorder, uri: str, version: int, start: tuple[int, int], end: tuple[int, int], text: str) -> None:
    """An incremental didChange: replace the LSP range start..end (UTF-16 units) by `text`."""
    change = types.TextDocumentContentChangePartial(range=types.Range(
        start=types.Position(*start), end=types.Position(*end)), text=text)
    params = types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version), content_changes=[change])
    server.workspace.update_text_document(params.text_document, change)


def test_findings_after_incremental_edits_equal_a_fresh_lint_of_the_same_text(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    server = _server(tmp_path)
    uri = (tmp_path / "train.py").as_uri()
    server.open(uri, BAD)
    server.lint(uri)
    # Insert lines (the findings below move), edit after a non-BMP character (2 UTF-16
    # units), delete a line, then insert at the top: each lint equals a fresh one.
    edits = [((1, 0), (1, 0), 's = "\U0001F600"\nx = torch.symeig(3)\n'),
             ((1, 8), (1, 8), " + 'a'"),
             ((3, 0), (4, 0), ""),
             ((0, 12), (0, 12), "\nimport torch.nn.functional as F\ny = F.softmax(x)\n")]
    for version, (start, end, text) in enumerate(edits, 2):
        _edit(server, uri, version, start, end, text)
        server.lint(uri)
        source = server.workspace.get_text_document(uri).source
        (tmp_path / "train.py").write_text(source, encoding="utf-8")
        assert _linted(server, uri) == _check(tmp_path, "train.py")
        assert _diagnostics(server.sent[-1]) == [(row, col, code) for row, col, code, _ in _linted(server, uri)]
    head, rest = BAD.split("\n\n", 1)
    assert source == head + '\nimport torch.nn.functional as F\ny = F.softmax(x)\n\ns = "\U0001F600" + \'a\'\n' \
        'x = torch.symeig(3)\n' + rest
    assert {"TL901"} <= {code for _, _, code in _diagnostics(server.sent[-1])}


def test_a_lint_runs_with_the_cyclic_collector_off_and_collects_after_publishing(tmp_path, monkeypatch):
    from torchlint import language_server

    monkeypatch.chdir(tmp_path)
    server = _server(tmp_path)
    uri = (tmp_path / "train.py").as_uri()
    server.open(uri, BAD)
    during: list[bool] = []
    real = language_server.lint_document

    def recording(*args: object, **kwargs: object) -> object:
        during.append(gc.isenabled())
        if len(during) == 2:
            raise RuntimeError("a rule bug")
        return real(*args, **kwargs)

    monkeypatch.setattr(language_server, "lint_document", recording)
    collected: list[int] = []
    monkeypatch.setattr(language_server.gc, "collect", lambda generation=2: collected.append(generation))

    async def lint_twice() -> None:
        server.lint(uri)
        assert gc.isenabled() and not collected  # on again, and nothing collected before publishing
        await asyncio.sleep(0)
        assert collected == [1]  # the lint's young garbage, once the diagnostics are out
        server.lint(uri)  # the internal error is logged; the collector is on again all the same
        assert gc.isenabled() and server.idle_collection is not None
        assert server.idle_collection.when() - asyncio.get_running_loop().time() > language_server.IDLE_COLLECT_SECONDS / 2

    asyncio.run(lint_twice())
    assert during == [False, False] and len(server.sent) == 1 and "a rule bug" in server.logged[-1]


def test_edits_that_queue_behind_a_slow_lint_are_typing(tmp_path, monkeypatch):
    from torchlint import language_server

    monkeypatch.chdir(tmp_path)
    server = _server(tmp_path)
    uri = (tmp_path / "train.py").as_uri()
    server.open(uri, BAD)
    real = language_server.lint_document

    def slow(*args: object, **kwargs: object) -> object:
        time.sleep(DEBOUNCE_SECONDS * 1.2)  # a busy machine: the next keystrokes wait in the pipe
        return real(*args, **kwargs)

    monkeypatch.setattr(language_server, "lint_document", slow)

    async def type_behind_a_lint() -> None:
        loop = asyncio.get_running_loop()
        _change(server, uri, 2, BAD + "#\n")
        assert server.pending[uri].when() - loop.time() <= QUICK_SECONDS  # a lone edit
        while uri in server.pending:
            await asyncio.sleep(QUICK_SECONDS)
        _change(server, uri, 3, BAD + "##\n")  # read as soon as the lint let go of the loop
        assert server.pending[uri].when() - loop.time() > QUICK_SECONDS  # typing: waits for the pause
        server.cancel(uri)

    asyncio.run(type_behind_a_lint())
    assert len(server.sent) == 1


def test_every_publication_over_a_sequence_of_edits_equals_a_fresh_check(tmp_path, monkeypatch):
    """Edits that add and remove findings, a noqa comment, and saved edits to the module the
    document imports (its findings depend on base.py through the project index): after each
    step, what the server published for each open document is `torchlint check` of its text."""
    root = tmp_path / "project"
    shutil.copytree(MODULES, root)
    (root / "torchlint.toml").write_text(f'extend-select = ["{ATTRIBUTE}"]\n')
    monkeypatch.chdir(root)
    server = _server(root)
    net, base = root / "models" / "net.py", root / "models" / "base.py"
    texts = {path: path.read_text() for path in (net, base)}
    versions = {path: 1 for path in (net, base)}
    for path in (net, base):
        server.open(path.as_uri(), texts[path])
        _notify(server, types.TEXT_DOCUMENT_DID_OPEN, types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
            uri=path.as_uri(), language_id="python", version=1, text=texts[path])))
    lightning, plain = texts[base], "class Base:\n    pass\n"
    attribute = "        self.logvar = torch.full(fill_value=0.0, size=(timesteps,))  # expect: TL206\n"
    steps = [
        (net, lambda t: t.replace(attribute, attribute + "        self.extra = torch.zeros(2)\n"), False),  # adds TL206
        (net, lambda t: t + "\nbad = torch.symeig(3)\n", False),  # adds TL901
        (base, lambda t: plain, True),  # Net is no Module now: both TL206 go
        (net, lambda t: t.replace("\nbad = torch.symeig(3)\n", ""), False),  # TL901 goes
        (base, lambda t: lightning, True),  # both TL206 are back
        (net, lambda t: t.replace("torch.zeros(2)\n", f"torch.zeros(2)  # noqa: {ATTRIBUTE}\n"), False),
    ]
    seen: list[set[str]] = []

    async def edit(path: Path, text: str, save: bool) -> None:
        versions[path] += 1
        texts[path] = text
        path.write_text(text)  # the fresh check reads the disk; the index reads saved files
        _change(server, path.as_uri(), versions[path], text)
        while server.pending:
            await asyncio.sleep(QUICK_SECONDS)
        if save:
            _notify(server, types.TEXT_DOCUMENT_DID_SAVE, types.DidSaveTextDocumentParams(
                text_document=types.TextDocumentIdentifier(uri=path.as_uri())))

    async def run_steps() -> None:
        for path, change, save in steps:
            await edit(path, change(texts[path]), save)
            await asyncio.sleep(DEBOUNCE_SECONDS)  # a pause: the next edit is a lone one
            for open_path in (net, base):
                uri = open_path.as_uri()
                last = _published(server, uri)[-1]
                assert _linted(server, uri) == _check(root, str(open_path.relative_to(root)))
                assert last.version == versions[open_path]
                assert _diagnostics(last) == [(row, col, code) for row, col, code, _ in _linted(server, uri)]
            seen.append({code for _, _, code in _diagnostics(_published(server, net.as_uri())[-1])})

    asyncio.run(run_steps())
    # The steps did what they say, so the comparisons above covered findings coming and going.
    assert seen == [{ATTRIBUTE}, {ATTRIBUTE, "TL901"}, {"TL901"}, set(), {ATTRIBUTE}, {ATTRIBUTE}]
    assert sum(f.code == ATTRIBUTE for f in server.findings[net.as_uri()]) == 1  # the noqa'd one is gone
