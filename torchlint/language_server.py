"""`torchlint server`: a Language Server Protocol server (on pygls) for editors.

- Diagnostics on open, on change (a lone edit at once; while typing, linting waits until it pauses) and on
  save, with the rule code, severity, and the rule's documentation as `codeDescription`. A save
  also re-lints the open documents whose last lint read the saved file through the project
  index (its reverse dependencies): the index reads files as saved.
- Diagnostics are pulled (`textDocument/diagnostic`) by a client that can, pushed otherwise.
- Code actions: the finding's quick fix when the rule offers one (an unsafe one only with the
  `unsafeFixes` setting), "Disable TLxxx for this line" (a `# noqa: TLxxx` comment), and
  `source.fixAll.torchlint`, which applies every allowed fix as `check --fix` would.
- Commands: `torchlint.server.fixAll` (applies fix-all to a document) and
  `torchlint.server.ruleDoc` (a rule's documentation page).
- Hover on a diagnostic shows its message and the rule's summary; on a code in a
  `# noqa: ...` comment, that rule's summary.
- Settings from the client (`initializationOptions`, `workspace/configuration`,
  `workspace/didChangeConfiguration`: see lsp_settings) act like command-line flags.
- Notebooks opened as notebooks (LSP notebook sync): the code cells are linted as one
  program and each cell gets its own findings, with rows counted within the cell.
- Configuration is resolved per file exactly as `torchlint check` resolves it, read afresh
  for every lint, so an edit to pyproject.toml applies to the next keystroke; files the
  config excludes get no diagnostics.
- A lint runs with the cyclic collector off (see TorchlintServer.collector_paused); edits
  that queue behind a lint count as typing, so a burst on a busy machine is still linted once.
- Bounded: publishing is linear (positions go through lsp_positions.DocumentIndex), a
  document over max-file-size gets one diagnostic instead of a lint, and a URI the editor
  has not opened is read only through safe_io (a FIFO there cannot hang the server)."""

from __future__ import annotations

import asyncio
import gc
import os
import sys
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Callable, Iterator, Optional
from urllib.parse import unquote, urlparse

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.workspace import TextDocument

from torchlint import __version__, gcpolicy
from torchlint.config import ConfigError, ConfigResolver
from torchlint.diagnostics import Finding, syntax_error_finding
from torchlint.api import config_error_finding, lint_document, lint_notebook_cells
from torchlint.lsp_actions import (FIX_ALL_COMMAND, FIX_ALL_KIND, RULE_DOC_COMMAND, SOURCE, rule_doc_payload, to_diagnostic,
                                   uri_argument)
from torchlint.lsp_code_actions import Unreadable, code_actions, document_fix_all, hover
from torchlint.lsp_input import WatchedInput
from torchlint.lsp_positions import DocumentIndex
from torchlint.lsp_settings import SECTION as SETTINGS_SECTION, SettingsStore, parse_settings
from torchlint.notebook import Cell, Notebook, is_notebook
from torchlint.safe_io import DEFAULT_MAX_FILE_SIZE, RefusedFile, read_regular_file, refusal, too_large_message
from torchlint.source import DecodeFailure, decode_source, physical_lines

# A lone edit is linted at once: with no fixed wait when no other message is waiting, after
# one short tick when the client sent more with it (lsp_input says which); an edit that follows
# another within DEBOUNCE_SECONDS waits until typing pauses (trailing edge: the wait restarts
# at every edit, so a burst is linted once).
QUICK_SECONDS = 0.005
DEBOUNCE_SECONDS = 0.15
# A full cyclic collection once the server has been idle this long after its last lint.
IDLE_COLLECT_SECONDS = 2.0


class TorchlintServer(LanguageServer):
    def __init__(self) -> None:
        # Notebooks: every notebook whose cells include Python ones is synced to the server.
        notebooks = types.NotebookDocumentSyncOptions(notebook_selector=[
            types.NotebookDocumentFilterWithCells(cells=[types.NotebookCellLanguage(language="python")], notebook="*")])
        super().__init__("torchlint", __version__, notebook_document_sync=notebooks)
        self.pending: dict[str, asyncio.TimerHandle] = {}  # per document or notebook URI
        self.last_change: dict[str, float] = {}  # per URI: loop time of the last scheduled change, or of the end of its lint
        self.findings: dict[str, list[Finding]] = {}  # per document or cell URI, from the last lint
        self.notebook_cells: dict[str, set[str]] = {}  # notebook URI -> cell URIs last published
        # Per document URI: the files (real paths) its last lint read through the project index,
        # so a saved import target re-lints the open documents that depend on it.
        self.dependencies: dict[str, frozenset[str]] = {}
        self.client_settings = SettingsStore()
        self.pull_diagnostics = False  # the client asks for diagnostics (textDocument/diagnostic)
        self.idle_collection: Optional[asyncio.TimerHandle] = None
        self.incoming: Optional[WatchedInput] = None  # stdin when serving it (None: in-process tests)

    # -- linting -------------------------------------------------------------
    def workspace_root(self) -> Path:
        root = self.workspace.root_path
        return Path(root).resolve() if root else Path.cwd().resolve()

    def uri_path(self, uri: str, untitled_name: str) -> Optional[Path]:
        parsed = urlparse(uri)
        if parsed.scheme == "file":
            return Path(TextDocument(uri).path)
        if parsed.scheme == "untitled":
            return self.workspace_root() / untitled_name
        return None  # other schemes (git:, ...) are not files torchlint can place in a config

    def document(self, uri: str, limit: int = DEFAULT_MAX_FILE_SIZE) -> TextDocument:
        """The editor's copy of `uri`. For a URI it has not opened, the file on disk read once
        through the safe reader (a regular file under `limit`), never pygls' fallback, which
        opens whatever the path names (a FIFO hangs it) on every access. Raises Unreadable."""
        opened = self.workspace.text_documents.get(unquote(uri))
        if opened is not None:
            return opened
        source = ""
        if urlparse(uri).scheme == "file":
            path = str(TextDocument(uri).path)
            why = refusal(path, [str(self.workspace_root())])  # and no symlink out of the workspace
            if why is not None:
                raise Unreadable(f"cannot read file: {why}")
            try:
                source = decode_source(read_regular_file(path, limit))
            except (RefusedFile, DecodeFailure) as exc:
                raise Unreadable(str(exc)) from None
            except OSError as exc:
                raise Unreadable(f"cannot read file: {exc.strerror or exc}") from None
        return TextDocument(uri, source=source, position_codec=self.workspace.position_codec)

    def configure(self, path: Path, uri: str = "") -> tuple[Optional[ConfigResolver], list[Finding]]:
        """(resolver, []) to lint `path`; (None, []) when the config excludes it; (None,
        [error]) when the config (or a client setting) is broken. A fresh resolver each time:
        config edits apply at once, like a new CLI run."""
        try:
            resolver = ConfigResolver(self.client_settings.for_uri(uri).overrides(), cwd=self.workspace_root())
            return (None if resolver.for_file(path).is_excluded(path) else resolver), []
        except ConfigError as exc:
            return None, [config_error_finding(str(path), exc)]

    @contextmanager
    def collector_paused(self) -> Iterator[None]:
        """A lint with the cyclic collector off. Its thresholds would start full collections
        in the middle of a lint, walking the whole heap (pygls, lsprotocol, the rules):
        a fifth of an edit's CPU, and most of its worst latencies. The lint's own cycles
        are collected once the diagnostics are out (a young collection, soon), the rest when
        the editor has been quiet for IDLE_COLLECT_SECONDS."""
        with gcpolicy.batch():
            yield
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # called outside the server's loop (a test): the collector's thresholds
        loop.call_soon(gc.collect, 1)
        if self.idle_collection is not None:
            self.idle_collection.cancel()
        self.idle_collection = loop.call_later(IDLE_COLLECT_SECONDS, gc.collect)

    def report_internal_error(self, path: Path, exc: Exception) -> None:
        """A rule bug: say so in the editor's log, keep serving."""
        self.window_log_message(types.LogMessageParams(
            type=types.MessageType.Error,
            message=f"torchlint: internal error while checking {path}: {type(exc).__name__}: {exc}; please report this"))

    def publish(self, uri: str, findings: list[Finding], document: Optional[TextDocument] = None) -> None:
        """Send `findings` as the diagnostics of `uri`. Positions are converted through one
        line index, built once: linear in the size of the document plus the findings."""
        if document is None:
            document = self.workspace.text_documents.get(unquote(uri))
        if document is None and findings:  # a URI the editor has not opened (a save, a notebook)
            try:
                document = self.document(uri)
            except Unreadable:
                pass
        document = document or TextDocument(uri, source="", position_codec=self.workspace.position_codec)
        positions = DocumentIndex(document)
        self.findings[uri] = findings
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, diagnostics=[to_diagnostic(f, positions) for f in findings], version=document.version))

    def lint(self, uri: str) -> None:
        self.pending.pop(uri, None)
        linted = self.document_findings(uri)
        if linted is not None:
            self.publish(uri, *linted)

    def document_findings(self, uri: str) -> Optional[tuple[list[Finding], Optional[TextDocument]]]:
        """The findings of a (non-notebook) document and the document read, or None after an
        internal error (logged)."""
        # An .ipynb opened as text is JSON, whose positions are not the cells': notebooks
        # are linted when the editor opens them as notebooks (lint_notebook below).
        path = self.uri_path(uri, "untitled.py")
        findings: list[Finding] = []
        document: Optional[TextDocument] = None
        if path is not None and not is_notebook(str(path)):
            resolver, findings = self.configure(path, uri)
            if resolver is not None:
                limit = resolver.for_file(path).max_file_size
                try:
                    document = self.document(uri, limit)
                    data = document.source.encode("utf-8", "surrogatepass")
                    # Over the cap: one diagnostic saying so, as `torchlint check` reports it.
                    deps: dict[str, Optional[str]] = {}
                    with self.collector_paused():
                        findings = ([syntax_error_finding(str(path), too_large_message(len(data), limit), 1, 1)]
                                    if len(data) > limit else lint_document(path, data, resolver, deps=deps))
                    self.dependencies[uri] = frozenset(os.path.realpath(d) for d in deps)
                except Unreadable as exc:
                    findings = [syntax_error_finding(str(path), str(exc), 1, 1)]
                except Exception as exc:
                    self.report_internal_error(path, exc)
                    return None
        return findings, document

    def relint_all(self) -> None:
        """After a settings change: every open document and notebook again (a pulling
        client is asked to pull again instead)."""
        cells = {c for cs in self.notebook_cells.values() for c in cs}
        for notebook_uri in list(self.notebook_cells):
            self.lint_notebook(notebook_uri)
        if self.pull_diagnostics:
            refresh = self.client_capabilities.workspace and self.client_capabilities.workspace.diagnostics
            if refresh and refresh.refresh_support:
                self.workspace_diagnostic_refresh(None)
            return
        for uri in list(self.workspace.text_documents):
            if uri not in cells:
                self.lint(uri)

    def lint_notebook(self, notebook_uri: str) -> None:
        """Lint an open notebook's code cells as one program and publish each cell's
        findings on that cell's document (rows count within the cell)."""
        self.pending.pop(notebook_uri, None)
        notebook_document = self.workspace.get_notebook_document(notebook_uri=notebook_uri)
        if notebook_document is None:
            return
        path = self.uri_path(notebook_uri, "untitled.ipynb")
        notebook = Notebook(str(path or notebook_uri))
        cell_uris: dict[int, str] = {}
        documents: dict[str, TextDocument] = {}
        size = 0
        for number, cell in enumerate(notebook_document.cells, 1):
            document = self.workspace.text_documents.get(unquote(cell.document))
            if cell.kind != types.NotebookCellKind.Code or document is None:
                continue
            if document.language_id not in (None, "python"):
                continue  # a %%sql or R cell in a mixed notebook
            notebook.cells.append(Cell(number, physical_lines(document.source)))
            cell_uris[number] = cell.document
            documents[cell.document] = document
            size += len(document.source.encode("utf-8", "surrogatepass"))
        findings: list[Finding] = []
        if path is not None:
            resolver, errors = self.configure(path, notebook_uri)
            findings = [replace(e, cell=notebook.cells[0].number) for e in errors[:1] if notebook.cells]
            limit = resolver.for_file(path).max_file_size if resolver is not None else 0
            if resolver is not None and size > limit and notebook.cells:
                findings = [replace(syntax_error_finding(notebook.path, too_large_message(size, limit), 1, 1),
                                    cell=notebook.cells[0].number)]
            elif resolver is not None:
                try:
                    with self.collector_paused():
                        findings = lint_notebook_cells(path, notebook, resolver)
                except Exception as exc:
                    self.report_internal_error(path, exc)
                    return
        for number, uri in cell_uris.items():
            self.publish(uri, [f for f in findings if f.cell == number], documents[uri])
        for gone in self.notebook_cells.get(notebook_uri, set()) - set(cell_uris.values()):
            self.clear(gone)
        self.notebook_cells[notebook_uri] = set(cell_uris.values())

    def relint_dependents(self, uri: str) -> None:
        """After `uri` was saved: lint again the other open documents whose last lint read it
        through the project index (the index reads saved files, so a save is when they change)."""
        path = self.uri_path(uri, "untitled.py")
        if path is None:
            return
        real = os.path.realpath(path)
        for other, deps in list(self.dependencies.items()):
            if other != uri and real in deps and unquote(other) in self.workspace.text_documents:
                self.lint(other)

    def clear(self, uri: str) -> None:
        self.findings.pop(uri, None)
        self.dependencies.pop(uri, None)
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    def schedule(self, uri: str, action: Optional[Callable[[str], None]] = None) -> None:
        loop = asyncio.get_running_loop()
        previous = self.pending.pop(uri, None)
        if previous is not None:
            previous.cancel()
        now = loop.time()
        typing = previous is not None or now - self.last_change.get(uri, float("-inf")) < DEBOUNCE_SECONDS
        self.last_change[uri] = now
        # A lone edit: at the loop's next turn, noting which message it came in.
        delay, since = (DEBOUNCE_SECONDS, None) if typing else (0.0, self.incoming.begun if self.incoming else None)
        self.pending[uri] = loop.call_later(delay, self.run_scheduled, action or self.lint, uri, since)

    def run_scheduled(self, action: Callable[[str], None], uri: str, since: Optional[int] = None) -> None:
        """`action(uri)`, after which the lint's end counts as the last change: the edits
        that queued while it ran (typing on a busy machine) are typing, not a lone edit each.
        A lone edit (`since`: its message) with more input waiting behind it waits one tick
        for it: the client's next change then makes this typing."""
        if since is not None and self.incoming is not None and self.incoming.waiting(since):
            self.pending[uri] = asyncio.get_running_loop().call_later(QUICK_SECONDS, self.run_scheduled, action, uri)
            return
        action(uri)
        self.last_change[uri] = asyncio.get_running_loop().time()

    def cancel(self, uri: str) -> None:
        self.last_change.pop(uri, None)
        pending = self.pending.pop(uri, None)
        if pending is not None:
            pending.cancel()


def log_problems(server: TorchlintServer, problems: list[str]) -> None:
    for problem in problems:
        server.window_log_message(types.LogMessageParams(type=types.MessageType.Warning, message=f"torchlint: {problem}"))


async def pull_configuration(server: TorchlintServer) -> None:
    """Ask a client that answers `workspace/configuration` for the `torchlint` section,
    globally and per workspace folder, then lint again with what it said."""
    workspace = server.client_capabilities.workspace
    if not (workspace and workspace.configuration):
        return
    folders = list(server.workspace.folders)
    items = [types.ConfigurationItem(section=SETTINGS_SECTION)] + [
        types.ConfigurationItem(scope_uri=folder, section=SETTINGS_SECTION) for folder in folders]
    try:
        answers = await server.workspace_configuration_async(types.ConfigurationParams(items=items))
    except Exception as exc:  # a client that announced the capability but fails it
        log_problems(server, [f"workspace/configuration failed: {exc}"])
        return
    if not isinstance(answers, (list, tuple)) or len(answers) != len(items):  # pygls gives a tuple
        return
    problems: list[str] = []
    if answers[0] is not None:
        server.client_settings.default, found = parse_settings(answers[0])
        problems += found
    for folder, answer in zip(folders, answers[1:]):
        if answer is not None:
            server.client_settings.folders[folder], found = parse_settings(answer)
            problems += found
    log_problems(server, problems)
    server.relint_all()


def create_server() -> TorchlintServer:
    server = TorchlintServer()
    register_settings(server)
    register_documents(server)
    register_notebooks(server)
    register_requests(server)
    return server


def register_settings(server: TorchlintServer) -> None:
    """The client's settings: at start, when asked, when changed."""

    @server.feature(types.INITIALIZE)
    def on_initialize(ls: TorchlintServer, params: types.InitializeParams) -> None:
        ls.client_settings.default, problems = parse_settings(params.initialization_options)
        document = params.capabilities.text_document
        ls.pull_diagnostics = bool(document and document.diagnostic)
        log_problems(ls, problems)

    @server.feature(types.INITIALIZED)
    async def on_initialized(ls: TorchlintServer, params: types.InitializedParams) -> None:
        await pull_configuration(ls)

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def on_configuration(ls: TorchlintServer, params: types.DidChangeConfigurationParams) -> None:
        # A pushed section (`{"torchlint": {...}}`) applies at once; otherwise pull it.
        pushed = params.settings.get(SETTINGS_SECTION) if isinstance(params.settings, dict) else None
        if pushed is not None:
            ls.client_settings.default, problems = parse_settings(pushed)
            ls.client_settings.folders.clear()
            log_problems(ls, problems)
            ls.relint_all()
        else:
            await pull_configuration(ls)


def register_documents(server: TorchlintServer) -> None:
    """Plain documents: diagnostics pushed on open/change/save, or pulled."""

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: TorchlintServer, params: types.DidOpenTextDocumentParams) -> None:
        if not ls.pull_diagnostics:
            ls.lint(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: TorchlintServer, params: types.DidChangeTextDocumentParams) -> None:
        if not ls.pull_diagnostics:  # a pulling client asks again when it wants to
            ls.schedule(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: TorchlintServer, params: types.DidSaveTextDocumentParams) -> None:
        if not ls.pull_diagnostics:
            ls.lint(params.text_document.uri)
            ls.relint_dependents(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DIAGNOSTIC, types.DiagnosticOptions(
        identifier=SOURCE, inter_file_dependencies=False, workspace_diagnostics=False))
    def on_diagnostic(ls: TorchlintServer, params: types.DocumentDiagnosticParams) -> types.DocumentDiagnosticReport:
        return pull_report(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: TorchlintServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.cancel(params.text_document.uri)
        ls.clear(params.text_document.uri)


def register_notebooks(server: TorchlintServer) -> None:
    """Notebooks opened as notebooks: linted as one program, per cell."""

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def notebook_did_open(ls: TorchlintServer, params: types.DidOpenNotebookDocumentParams) -> None:
        ls.lint_notebook(params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def notebook_did_change(ls: TorchlintServer, params: types.DidChangeNotebookDocumentParams) -> None:
        ls.schedule(params.notebook_document.uri, ls.lint_notebook)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    def notebook_did_save(ls: TorchlintServer, params: types.DidSaveNotebookDocumentParams) -> None:
        ls.lint_notebook(params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def notebook_did_close(ls: TorchlintServer, params: types.DidCloseNotebookDocumentParams) -> None:
        uri = params.notebook_document.uri
        ls.cancel(uri)
        for cell in ls.notebook_cells.pop(uri, set()):
            ls.clear(cell)


def register_requests(server: TorchlintServer) -> None:
    """Code actions, hover and commands."""

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, types.CodeActionKind.SourceFixAll, FIX_ALL_KIND]))
    def on_code_action(ls: TorchlintServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        return code_actions(ls, params)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def on_hover(ls: TorchlintServer, params: types.HoverParams) -> Optional[types.Hover]:
        return hover(ls, params)

    @server.command(FIX_ALL_COMMAND)
    async def fix_all_command(ls: TorchlintServer, *arguments: object) -> bool:
        """Apply fix-all to the document given as `[uri]` or `[{"uri": ...}]`; True when the
        client applied an edit."""
        uri = uri_argument(list(arguments))
        if uri is None:
            return False
        try:
            edit = document_fix_all(ls, uri, ls.document(uri))
        except Unreadable:
            return False
        if edit is None:
            return False
        result = await ls.workspace_apply_edit_async(types.ApplyWorkspaceEditParams(
            edit=types.WorkspaceEdit(changes={uri: [edit]}), label="torchlint: fix all"))
        return bool(result and result.applied)

    @server.command(RULE_DOC_COMMAND)
    def rule_doc_command(ls: TorchlintServer, *arguments: object) -> Optional[dict[str, str]]:
        return rule_doc_payload(list(arguments))


def pull_report(server: TorchlintServer, uri: str) -> types.RelatedFullDocumentDiagnosticReport:
    """A pulled document's diagnostics. Notebook cells are linted with their notebook and
    pushed (the notebook is one program), so a cell's pull answers nothing."""
    if uri in {c for cells in server.notebook_cells.values() for c in cells}:
        return types.RelatedFullDocumentDiagnosticReport(items=[])
    linted = server.document_findings(uri)
    findings, document = linted if linted is not None else ([], None)
    server.findings[uri] = findings
    document = document or TextDocument(uri, source="", position_codec=server.workspace.position_codec)
    positions = DocumentIndex(document)
    return types.RelatedFullDocumentDiagnosticReport(items=[to_diagnostic(f, positions) for f in findings])


def serve() -> None:
    """Serve on stdin/stdout until the client's `exit`: exit status 0 after a `shutdown`
    request, 1 without one (as LSP specifies). pygls gets its own handle on stdout: it
    closes the one it is given on `exit`, and the CLI still flushes sys.stdout afterwards."""
    server = create_server()
    stdout = os.fdopen(os.dup(1), "wb", buffering=0)
    server.incoming = WatchedInput(sys.stdin.buffer.fileno())
    try:
        server.start_io(server.incoming, stdout)  # type: ignore[arg-type]  # readline and read, as pygls reads
    finally:
        if not stdout.closed:
            stdout.close()
    if not getattr(server.protocol, "_shutdown", True):
        sys.exit(1)
