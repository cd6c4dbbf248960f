"""`torchlint server` as ruff's server behaves, driven by a real LSP client over stdio:
client settings (initializationOptions, workspace/configuration, didChangeConfiguration),
the fix-all source action, unsafe quick fixes behind `unsafeFixes`, pull diagnostics,
the fixAll/ruleDoc commands and hover on a diagnostic."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any, Optional

import pytest

pytest.importorskip("pygls")
from lsprotocol import types  # noqa: E402
from pygls.lsp.client import LanguageClient  # noqa: E402

from test_language_server import TIMEOUT, Session, _apply, _stop  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
# TL108 has a safe fix (call the grad-mode class), TL601 an unsafe one (weights_only=True).
SOURCE = 'import torch\n\nwith torch.no_grad:\n    y = model(x)\nm = torch.load("ckpt.pt")\n'
FIXED = 'import torch\n\nwith torch.no_grad():\n    y = model(x)\nm = torch.load("ckpt.pt")\n'
BOTH = {"select": ["TL108", "TL601"]}


async def _start(root: Path, settings: Optional[dict] = None, pull: bool = False,
                 configuration: Optional[dict] = None) -> Session:
    """A client with the given initializationOptions settings; `pull` announces pull
    diagnostics; `configuration` is what it answers to workspace/configuration (the
    capability is announced only when it is given)."""
    client = LanguageClient("torchlint-test", "1")
    session = Session(client)
    session.applied = []  # type: ignore[attr-defined]

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_diagnostics(params: types.PublishDiagnosticsParams) -> None:
        session.published.setdefault(params.uri, []).append(params)
        session.arrived.set()

    @client.feature(types.WORKSPACE_CONFIGURATION)
    def on_configuration(params: types.ConfigurationParams) -> list[Any]:
        return [configuration if item.section == "torchlint" else None for item in params.items]

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def on_apply_edit(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        session.applied.append(params.edit)  # type: ignore[attr-defined]
        return types.ApplyWorkspaceEditResult(applied=True)

    capabilities = types.ClientCapabilities(
        text_document=types.TextDocumentClientCapabilities(
            diagnostic=types.DiagnosticClientCapabilities() if pull else None),
        workspace=types.WorkspaceClientCapabilities(configuration=configuration is not None))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    await client.start_io(sys.executable, "-m", "torchlint", "server", cwd=str(root), env=env)
    result = await asyncio.wait_for(client.initialize_async(types.InitializeParams(
        capabilities=capabilities, root_uri=root.as_uri(),
        initialization_options={"settings": settings} if settings is not None else None,
        workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="ws")])), TIMEOUT)
    session.capabilities = result.capabilities  # type: ignore[attr-defined]
    client.initialized(types.InitializedParams())
    return session


def _open(session: Session, uri: str, text: str = SOURCE) -> None:
    session.client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))


async def _actions(session: Session, uri: str, only: Optional[list[str]] = None,
                   diagnostics: Optional[list[types.Diagnostic]] = None) -> list[types.CodeAction]:
    whole = types.Range(start=types.Position(line=0, character=0), end=types.Position(line=5, character=0))
    return await asyncio.wait_for(session.client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=whole,
        context=types.CodeActionContext(diagnostics=diagnostics or [], only=only))), TIMEOUT)


def _run(scenario) -> None:
    asyncio.run(scenario())


def test_fix_all_source_action_and_unsafe_quick_fixes_behind_the_setting(tmp_path):
    uri = (tmp_path / "train.py").as_uri()
    (tmp_path / "train.py").write_text(SOURCE)

    async def scenario() -> None:
        for unsafe in (False, True):
            session = await _start(tmp_path, {**BOTH, "unsafeFixes": unsafe})
            try:
                assert "source.fixAll.torchlint" in session.capabilities.code_action_provider.code_action_kinds
                _open(session, uri)
                diagnostics = await session.next_diagnostics(uri, 1)
                assert sorted(d.code for d in diagnostics) == ["TL108", "TL601"]
                # `only: ["source.fixAll"]` asks for torchlint's fix-all too (kinds are hierarchical).
                [fix_all] = await _actions(session, uri, only=["source.fixAll"])
                assert fix_all.kind == "source.fixAll.torchlint"
                fixed = _apply(SOURCE, fix_all.edit.changes[uri])
                if unsafe:
                    assert fixed == FIXED.replace('torch.load("ckpt.pt")', 'torch.load("ckpt.pt", weights_only=True)')
                else:
                    assert fixed == FIXED  # the unsafe TL601 fix is left out
                quick = [a.title for a in await _actions(session, uri, only=["quickfix"], diagnostics=diagnostics)]
                assert any("TL108" in t and "Disable" not in t for t in quick)
                assert any("TL601" in t and "Disable" not in t for t in quick) == unsafe
                assert "Disable TL601 for this line" in quick
            finally:
                await _stop(session)

    _run(scenario)


def test_fix_all_offers_nothing_on_a_clean_document_and_commands_apply_it(tmp_path):
    clean_uri = (tmp_path / "clean.py").as_uri()
    uri = (tmp_path / "train.py").as_uri()

    async def scenario() -> None:
        session = await _start(tmp_path, BOTH)
        try:
            _open(session, clean_uri, "import torch\nx = torch.zeros(3)\n")
            assert await session.next_diagnostics(clean_uri, 1) == []
            assert not await _actions(session, clean_uri, only=["source.fixAll.torchlint"])

            _open(session, uri)
            await session.next_diagnostics(uri, 1)
            applied = await asyncio.wait_for(session.client.workspace_execute_command_async(types.ExecuteCommandParams(
                command="torchlint.server.fixAll", arguments=[{"uri": uri}])), TIMEOUT)
            assert applied is True
            [edit] = session.applied  # type: ignore[attr-defined]
            assert _apply(SOURCE, edit.changes[uri]) == FIXED

            doc = await asyncio.wait_for(session.client.workspace_execute_command_async(types.ExecuteCommandParams(
                command="torchlint.server.ruleDoc", arguments=["tl108"])), TIMEOUT)
            assert doc["code"] == "TL108" and doc["name"] == "grad-mode-not-called"
            assert "## What it does" in doc["markdown"] and doc["url"].endswith("TL108-grad-mode-not-called.md")
            unknown = await asyncio.wait_for(session.client.workspace_execute_command_async(types.ExecuteCommandParams(
                command="torchlint.server.ruleDoc", arguments=["TL999"])), TIMEOUT)
            assert unknown is None
        finally:
            await _stop(session)

    _run(scenario)


def test_hover_on_a_diagnostic_shows_its_message_and_the_rules_summary(tmp_path):
    uri = (tmp_path / "train.py").as_uri()

    async def scenario() -> None:
        session = await _start(tmp_path, BOTH)
        try:
            _open(session, uri)
            await session.next_diagnostics(uri, 1)
            hover = await asyncio.wait_for(session.client.text_document_hover_async(types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=2, character=8))),
                TIMEOUT)
            assert hover is not None
            text = hover.contents.value
            assert "**TL108** (grad-mode-not-called" in text and "TL108-grad-mode-not-called.md" in text
            assert "What it does" not in text and len(text.splitlines()) > 3  # the section's text, not its title
            nothing = await asyncio.wait_for(session.client.text_document_hover_async(types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=3, character=2))),
                TIMEOUT)
            assert nothing is None
        finally:
            await _stop(session)

    _run(scenario)


def test_settings_from_initialization_workspace_configuration_and_a_change(tmp_path):
    uri = (tmp_path / "train.py").as_uri()

    async def scenario() -> None:
        # initializationOptions: ignore wins over the default selection.
        session = await _start(tmp_path, {**BOTH, "ignore": ["TL601"]})
        try:
            _open(session, uri)
            assert [d.code for d in await session.next_diagnostics(uri, 1)] == ["TL108"]
            # A pushed change applies at once, to the open document.
            session.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
                settings={"torchlint": {"select": ["TL601"]}}))
            assert [d.code for d in await session.next_diagnostics(uri, 2)] == ["TL601"]
        finally:
            await _stop(session)

        # workspace/configuration answers override initializationOptions.
        session = await _start(tmp_path, BOTH, configuration={"select": ["TL108"]})
        try:
            _open(session, uri)
            for count in range(1, 4):  # the open and the re-lint after the answer may come in either order
                codes = [d.code for d in await session.next_diagnostics(uri, count)]
                if codes == ["TL108"]:
                    break
            assert codes == ["TL108"]
        finally:
            await _stop(session)

        # A bad setting is a diagnostic saying what to change, not a silent server.
        session = await _start(tmp_path, {"select": ["TL99x"]})
        try:
            _open(session, uri)
            [error] = await session.next_diagnostics(uri, 1)
            assert error.code == "TL002" and "TL99X" in error.message and "torchlint.select" in error.message
        finally:
            await _stop(session)

    _run(scenario)


def test_a_client_that_pulls_gets_diagnostics_by_pull_and_none_pushed(tmp_path):
    uri = (tmp_path / "train.py").as_uri()

    async def scenario() -> None:
        session = await _start(tmp_path, BOTH, pull=True)
        try:
            assert session.capabilities.diagnostic_provider is not None
            _open(session, uri)
            report = await asyncio.wait_for(session.client.text_document_diagnostic_async(
                types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri=uri))), TIMEOUT)
            assert sorted(d.code for d in report.items) == ["TL108", "TL601"]
            # Code actions work from the pulled findings.
            titles = [a.title for a in await _actions(session, uri, only=["quickfix"])]
            assert "Disable TL108 for this line" in titles
            await asyncio.sleep(1.0)  # longer than the push debounce
            assert uri not in session.published
        finally:
            await _stop(session)

    _run(scenario)
