"""`torchlint server` driven by a real LSP client (pygls' LanguageClient) over stdio:
open a document, receive diagnostics, edit it, receive updated diagnostics, run the
"disable for this line" code action and apply it, hover on a noqa code."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

pytest.importorskip("pygls")
from lsprotocol import types  # noqa: E402
from pygls.lsp.client import LanguageClient  # noqa: E402

from test_cli import BAD, write  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
TIMEOUT = 60  # generous: a cold start imports the rules; the test never asserts on speed


class Session:
    """A started server plus the diagnostics it has published, per URI, in order."""

    def __init__(self, client: LanguageClient) -> None:
        self.client = client
        self.published: dict[str, list[types.PublishDiagnosticsParams]] = {}
        self.arrived = asyncio.Event()

    async def next_diagnostics(self, uri: str, count: int) -> list[types.Diagnostic]:
        """Wait until the `count`-th publication for `uri` and return it."""
        async def wait() -> None:
            while len(self.published.get(uri, [])) < count:
                self.arrived.clear()
                await self.arrived.wait()
        await asyncio.wait_for(wait(), TIMEOUT)
        return list(self.published[uri][count - 1].diagnostics)


async def _start(root: Path) -> Session:
    client = LanguageClient("torchlint-test", "1")
    session = Session(client)

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_diagnostics(params: types.PublishDiagnosticsParams) -> None:
        session.published.setdefault(params.uri, []).append(params)
        session.arrived.set()

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    await client.start_io(sys.executable, "-m", "torchlint", "server", cwd=str(root), env=env)
    await asyncio.wait_for(client.initialize_async(types.InitializeParams(
        capabilities=types.ClientCapabilities(), root_uri=root.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="ws")])), TIMEOUT)
    client.initialized(types.InitializedParams())
    return session


async def _stop(session: Session) -> None:
    await asyncio.wait_for(session.client.shutdown_async(None), TIMEOUT)
    session.client.exit(None)
    await session.client.stop()


def _apply(text: str, edits: list[types.TextEdit]) -> str:
    lines = text.splitlines(keepends=True)
    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        start, end = edit.range.start, edit.range.end
        offset = lambda p, lines=lines: sum(len(x) for x in lines[:p.line]) + p.character  # noqa: E731  (ASCII text)
        joined = "".join(lines)
        joined = joined[:offset(start)] + edit.new_text + joined[offset(end):]
        lines = joined.splitlines(keepends=True)
    return "".join(lines)


def test_diagnostics_edits_and_code_action(tmp_path):
    write(tmp_path, "pyproject.toml", '[tool.torchlint]\nignore = ["TL102"]\n')
    uri = write(tmp_path, "train.py", BAD).as_uri()

    async def scenario() -> None:
        session = await _start(tmp_path)
        client = session.client
        try:
            client.text_document_did_open(types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=BAD)))
            first = await session.next_diagnostics(uri, 1)
            # pyproject.toml ignores TL102, as `torchlint check` would.
            assert [d.code for d in first] == ["TL101"]
            d = first[0]
            assert d.source == "torchlint" and d.severity == types.DiagnosticSeverity.Error
            assert (d.range.start.line, d.range.start.character) == (4, 4)
            assert d.code_description.href.endswith("rules_docs/TL101-backward-under-no-grad.md")

            # Edit: the region no longer disables grad; the finding goes away.
            fixed = BAD.replace("with torch.no_grad():", "with torch.enable_grad():")
            assert fixed != BAD
            client.text_document_did_change(types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=fixed)]))
            assert await session.next_diagnostics(uri, 2) == []

            # Edit back; ask for code actions on the finding and apply "disable for this line".
            client.text_document_did_change(types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=3),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=BAD)]))
            [again] = await session.next_diagnostics(uri, 3)
            actions = await asyncio.wait_for(client.text_document_code_action_async(types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri), range=again.range,
                context=types.CodeActionContext(diagnostics=[again]))), TIMEOUT)
            titles = [a.title for a in actions]
            assert "Disable TL101 for this line" in titles
            action = actions[titles.index("Disable TL101 for this line")]
            assert action.kind == types.CodeActionKind.QuickFix
            edited = _apply(BAD, action.edit.changes[uri])
            assert edited.splitlines()[4] == "    loss.backward()  # noqa: TL101"
            client.text_document_did_change(types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=4),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=edited)]))
            assert await session.next_diagnostics(uri, 4) == []

            # Hover on the code in the noqa comment explains the rule.
            column = edited.splitlines()[4].index("TL101") + 2
            hover = await asyncio.wait_for(client.text_document_hover_async(types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(line=4, character=column))), TIMEOUT)
            assert hover is not None and "backward-under-no-grad" in hover.contents.value
            assert "no_grad" in hover.contents.value or "grad-disabled" in hover.contents.value
            nothing = await asyncio.wait_for(client.text_document_hover_async(types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(line=4, character=2))), TIMEOUT)
            assert nothing is None
        finally:
            await _stop(session)

    asyncio.run(scenario())


def test_noqa_edit_extends_an_existing_list_and_respects_bare_noqa():
    from pygls.workspace import TextDocument

    from torchlint.lsp_code_actions import noqa_edit

    doc = TextDocument("file:///x.py", "a = 1  # noqa: E501\nb = 2  # noqa\nc = '''x\ny'''\nd = 3  # why\n")
    edit = noqa_edit(doc, 1, "TL101")
    assert edit.new_text == ", TL101" and edit.range.start.character == len("a = 1  # noqa: E501")
    assert noqa_edit(doc, 2, "TL101") is None  # already suppresses everything
    assert noqa_edit(doc, 3, "TL101") is None  # line ends inside a string
    edit = noqa_edit(doc, 5, "TL101")
    assert edit.new_text == "  # noqa: TL101" and edit.range.start.character == len("d = 3  # why")


def test_excluded_and_misconfigured_files(tmp_path):
    write(tmp_path, "pyproject.toml", '[tool.torchlint]\nextend-exclude = ["gen"]\n')
    write(tmp_path, "bad/pyproject.toml", '[tool.torchlint]\nselect = 3\n')
    excluded = (tmp_path / "gen" / "x.py").as_uri()
    broken = (tmp_path / "bad" / "y.py").as_uri()

    async def scenario() -> None:
        session = await _start(tmp_path)
        try:
            for uri in (excluded, broken):
                session.client.text_document_did_open(types.DidOpenTextDocumentParams(
                    text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=BAD)))
            assert await session.next_diagnostics(excluded, 1) == []
            [error] = await session.next_diagnostics(broken, 1)
            assert error.code == "TL002" and "configuration error" in error.message and "select" in error.message
        finally:
            await _stop(session)

    asyncio.run(scenario())


def test_notebook_cells_are_linted_as_one_program(tmp_path):
    notebook_uri = (tmp_path / "train.ipynb").as_uri()
    cell = [f"vscode-notebook-cell:{tmp_path / 'train.ipynb'}#cell{i}" for i in range(3)]
    texts = ["import torch\nmodel = torch.nn.Linear(2, 2)\nx = torch.randn(3, 2)\n",
             "# Evaluate",
             "%matplotlib inline\nwith torch.no_grad():\n    loss = model(x).sum()\n    loss.backward()\n"]
    kinds = [types.NotebookCellKind.Code, types.NotebookCellKind.Markup, types.NotebookCellKind.Code]

    async def scenario() -> None:
        session = await _start(tmp_path)
        client = session.client
        try:
            client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
                notebook_document=types.NotebookDocument(
                    uri=notebook_uri, notebook_type="jupyter-notebook", version=1,
                    cells=[types.NotebookCell(kind=k, document=u) for k, u in zip(kinds, cell)]),
                cell_text_documents=[
                    types.TextDocumentItem(uri=u, language_id="python" if k == types.NotebookCellKind.Code else "markdown",
                                           version=1, text=t)
                    for u, t, k in zip(cell, texts, kinds) if k == types.NotebookCellKind.Code]))
            # The import in the first cell is known in the third; the magic is skipped.
            assert await session.next_diagnostics(cell[0], 1) == []
            [d] = await session.next_diagnostics(cell[2], 1)
            assert d.code == "TL101" and (d.range.start.line, d.range.start.character) == (3, 4)

            actions = await asyncio.wait_for(client.text_document_code_action_async(types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=cell[2]), range=d.range,
                context=types.CodeActionContext(diagnostics=[d]))), TIMEOUT)
            [noqa] = [a for a in actions if a.title == "Disable TL101 for this line"]
            assert _apply(texts[2], noqa.edit.changes[cell[2]]).splitlines()[3] == "    loss.backward()  # noqa: TL101"

            fixed = texts[2].replace("torch.no_grad()", "torch.enable_grad()")
            client.notebook_document_did_change(types.DidChangeNotebookDocumentParams(
                notebook_document=types.VersionedNotebookDocumentIdentifier(uri=notebook_uri, version=2),
                change=types.NotebookDocumentChangeEvent(cells=types.NotebookDocumentCellChanges(text_content=[
                    types.NotebookDocumentCellContentChanges(
                        document=types.VersionedTextDocumentIdentifier(uri=cell[2], version=2),
                        changes=[types.TextDocumentContentChangeWholeDocument(text=fixed)])]))))
            assert await session.next_diagnostics(cell[2], 2) == []
        finally:
            await _stop(session)

    asyncio.run(scenario())
