"""`torchlint server`: a Language Server Protocol server (on pygls) for editors.

- Diagnostics on open, on change (debounced: linting waits until typing pauses) and on
  save, with the rule code, severity, and the rule's documentation as `codeDescription`.
- Code actions: the finding's quick fix when the rule offers one, and "Disable TLxxx for
  this line" (a `# noqa: TLxxx` comment).
- Hover on a code in a `# noqa: ...` comment shows that rule's summary.
- Notebooks opened as notebooks (LSP notebook sync): the code cells are linted as one
  program and each cell gets its own findings, with rows counted within the cell.
- Configuration is resolved per file exactly as `torchlint check` resolves it, read afresh
  for every lint, so an edit to pyproject.toml applies to the next keystroke; files the
  config excludes get no diagnostics.
- Bounded: publishing is linear (positions go through lsp_positions.DocumentIndex), a
  document over max-file-size gets one diagnostic instead of a lint, and a URI the editor
  has not opened is read only through safe_io (a FIFO there cannot hang the server)."""

from __future__ import annotations

import asyncio
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Callable, Optional
from urllib.parse import unquote, urlparse

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.workspace import TextDocument
from pygls.workspace.position_codec import ServerTextPosition, ServerTextRange

from torchlint import __version__
from torchlint.config import CliOverrides, ConfigError, ConfigResolver
from torchlint.diagnostics import Finding, syntax_error_finding
from torchlint.api import config_error_finding, lint_document, lint_notebook_cells
from torchlint.lsp_positions import DocumentIndex
from torchlint.notebook import Cell, Notebook, is_notebook
from torchlint.output.docs_url import rule_url
from torchlint import catalog
from torchlint.safe_io import DEFAULT_MAX_FILE_SIZE, RefusedFile, read_regular_file, refusal, too_large_message
from torchlint.source import DecodeFailure, decode_source, physical_lines

SOURCE = "torchlint"
DEBOUNCE_SECONDS = 0.3
_SEVERITY = {"error": types.DiagnosticSeverity.Error, "warning": types.DiagnosticSeverity.Warning,
             "info": types.DiagnosticSeverity.Information}


class Unreadable(Exception):
    """A URI the editor has not opened whose file torchlint will not read (a FIFO, a device,
    too large, undecodable); the message says why."""


class TorchlintServer(LanguageServer):
    def __init__(self) -> None:
        # Notebooks: every notebook whose cells include Python ones is synced to the server.
        notebooks = types.NotebookDocumentSyncOptions(notebook_selector=[
            types.NotebookDocumentFilterWithCells(cells=[types.NotebookCellLanguage(language="python")], notebook="*")])
        super().__init__("torchlint", __version__, notebook_document_sync=notebooks)
        self.pending: dict[str, asyncio.TimerHandle] = {}  # per document or notebook URI
        self.findings: dict[str, list[Finding]] = {}  # per document or cell URI, from the last lint
        self.notebook_cells: dict[str, set[str]] = {}  # notebook URI -> cell URIs last published

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

    def configure(self, path: Path) -> tuple[Optional[ConfigResolver], list[Finding]]:
        """(resolver, []) to lint `path`; (None, []) when the config excludes it; (None,
        [error]) when the config is broken. A fresh resolver each time: config edits apply
        at once, like a new CLI run."""
        try:
            resolver = ConfigResolver(CliOverrides(), cwd=self.workspace_root())
            return (None if resolver.for_file(path).is_excluded(path) else resolver), []
        except ConfigError as exc:
            return None, [config_error_finding(str(path), exc)]

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
        # An .ipynb opened as text is JSON, whose positions are not the cells': notebooks
        # are linted when the editor opens them as notebooks (lint_notebook below).
        path = self.uri_path(uri, "untitled.py")
        findings: list[Finding] = []
        document: Optional[TextDocument] = None
        if path is not None and not is_notebook(str(path)):
            resolver, findings = self.configure(path)
            if resolver is not None:
                limit = resolver.for_file(path).max_file_size
                try:
                    document = self.document(uri, limit)
                    data = document.source.encode("utf-8", "surrogatepass")
                    # Over the cap: one diagnostic saying so, as `torchlint check` reports it.
                    findings = ([syntax_error_finding(str(path), too_large_message(len(data), limit), 1, 1)]
                                if len(data) > limit else lint_document(path, data, resolver))
                except Unreadable as exc:
                    findings = [syntax_error_finding(str(path), str(exc), 1, 1)]
                except Exception as exc:
                    self.report_internal_error(path, exc)
                    return
        self.publish(uri, findings, document)

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
            resolver, errors = self.configure(path)
            findings = [replace(e, cell=notebook.cells[0].number) for e in errors[:1] if notebook.cells]
            limit = resolver.for_file(path).max_file_size if resolver is not None else 0
            if resolver is not None and size > limit and notebook.cells:
                findings = [replace(syntax_error_finding(notebook.path, too_large_message(size, limit), 1, 1),
                                    cell=notebook.cells[0].number)]
            elif resolver is not None:
                try:
                    findings = lint_notebook_cells(path, notebook, resolver)
                except Exception as exc:
                    self.report_internal_error(path, exc)
                    return
        for number, uri in cell_uris.items():
            self.publish(uri, [f for f in findings if f.cell == number], documents[uri])
        for gone in self.notebook_cells.get(notebook_uri, set()) - set(cell_uris.values()):
            self.clear(gone)
        self.notebook_cells[notebook_uri] = set(cell_uris.values())

    def clear(self, uri: str) -> None:
        self.findings.pop(uri, None)
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    def schedule(self, uri: str, action: Optional[Callable[[str], None]] = None) -> None:
        previous = self.pending.pop(uri, None)
        if previous is not None:
            previous.cancel()
        self.pending[uri] = asyncio.get_running_loop().call_later(DEBOUNCE_SECONDS, action or self.lint, uri)

    def cancel(self, uri: str) -> None:
        pending = self.pending.pop(uri, None)
        if pending is not None:
            pending.cancel()


def to_diagnostic(f: Finding, index: DocumentIndex) -> types.Diagnostic:
    message = f.message
    help_line = getattr(f, "help", None)
    if help_line:
        message += f"\nhelp: {help_line}"
    return types.Diagnostic(
        range=index.range(f.row, f.col, f.end_row, f.end_col),
        message=message,
        severity=_SEVERITY.get(f.severity, types.DiagnosticSeverity.Warning),
        code=f.code,
        code_description=types.CodeDescription(href=rule_url(f.code, f.name)),
        source=SOURCE,
        data={"row": f.row, "code": f.code},
    )


# -- code actions ---------------------------------------------------------------
def noqa_edit(document: TextDocument, row: int, code: str,
              index: Optional[DocumentIndex] = None) -> Optional[types.TextEdit]:
    """The edit that suppresses `code` on line `row`: extend an existing `# noqa: ...` list,
    or append `  # noqa: CODE`. None when the line already suppresses it or cannot take a comment."""
    index = index or DocumentIndex(document)
    lines = index.lines
    if not 0 < row <= len(lines) or (row == len(lines) and not lines[-1]):
        return None
    directives = index.directives()
    if any(d.file_level for d in directives.on_row(row)):
        return None  # the comment is a file-level directive: a line directive after it would be its text
    existing = directives.by_row.get(row)
    if existing is not None:
        if existing.names(code):
            return None  # a bare directive, or one that names the code, already suppresses it
        at = existing.codes_end
        return types.TextEdit(range=index.range(row, at + 1, row, at + 1), new_text=f", {code}")
    if not index.comment_allowed_at_end(row):
        return None
    end = len(lines[row - 1]) + 1
    return types.TextEdit(range=index.range(row, end, row, end), new_text=f"  # noqa: {code}")


def code_actions(server: TorchlintServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    uri = params.text_document.uri
    try:
        index = DocumentIndex(server.document(uri))
    except Unreadable:
        return []
    wanted = params.context.only
    actions: list[types.CodeAction] = []
    requested = ServerTextRange(ServerTextPosition(*index.from_client(params.range.start)),
                                ServerTextPosition(*index.from_client(params.range.end)))
    for f in server.findings.get(uri, []):
        # The client names the diagnostics under the cursor; a client that names none
        # gets the actions of every finding overlapping the requested range.
        diagnostic = next((d for d in params.context.diagnostics
                           if d.source == SOURCE and d.code == f.code and (d.data or {}).get("row") == f.row), None)
        span = ServerTextRange(ServerTextPosition(f.row - 1, f.col - 1), ServerTextPosition(f.end_row - 1, f.end_col - 1))
        if diagnostic is None and not span.overlaps(requested):
            continue
        related = [diagnostic] if diagnostic is not None else [to_diagnostic(f, index)]
        if f.fix and f.fix.edits and (wanted is None or types.CodeActionKind.QuickFix in wanted):
            fix = f.fix
            actions.append(types.CodeAction(
                title=f"{fix.message or 'Fix'} ({f.code})" + ("" if fix.safe else f" [{fix.applicability}]"),
                kind=types.CodeActionKind.QuickFix, diagnostics=related, is_preferred=fix.safe,
                edit=types.WorkspaceEdit(changes={uri: [
                    types.TextEdit(range=index.range(*e.start, *e.end), new_text=e.content) for e in fix.edits]})))
        if wanted is None or types.CodeActionKind.QuickFix in wanted:
            edit = noqa_edit(index.document, f.row, f.code, index)
            if edit is not None:
                actions.append(types.CodeAction(
                    title=f"Disable {f.code} for this line", kind=types.CodeActionKind.QuickFix,
                    diagnostics=related, edit=types.WorkspaceEdit(changes={uri: [edit]})))
    return actions


def hover(server: TorchlintServer, params: types.HoverParams) -> Optional[types.Hover]:
    try:
        index = DocumentIndex(server.document(params.text_document.uri))
    except Unreadable:
        return None
    if params.position.line >= len(index.lines):
        return None
    row, character = index.from_client(params.position)
    for directive in index.directives().on_row(row + 1):
        for span in directive.codes or ():
            if span.start <= character <= span.end:
                rule = catalog.static_rule(span.code)
                if rule is None:
                    return None
                text = (f"**{rule.code}** ({rule.name}, {rule.severity}): {rule.summary}\n\n"
                        f"[Documentation]({rule_url(rule.code, rule.name)})")
                return types.Hover(
                    contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text),
                    range=index.range(row + 1, span.start + 1, row + 1, span.end + 1))
    return None


def create_server() -> TorchlintServer:
    server = TorchlintServer()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: TorchlintServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.lint(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: TorchlintServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: TorchlintServer, params: types.DidSaveTextDocumentParams) -> None:
        ls.lint(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: TorchlintServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.cancel(params.text_document.uri)
        ls.clear(params.text_document.uri)

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

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION,
                    types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]))
    def on_code_action(ls: TorchlintServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        return code_actions(ls, params)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def on_hover(ls: TorchlintServer, params: types.HoverParams) -> Optional[types.Hover]:
        return hover(ls, params)

    return server


def serve() -> None:
    """Serve on stdin/stdout until the client's `exit`: exit status 0 after a `shutdown`
    request, 1 without one (as LSP specifies). pygls gets its own handle on stdout: it
    closes the one it is given on `exit`, and the CLI still flushes sys.stdout afterwards."""
    server = create_server()
    stdout = os.fdopen(os.dup(1), "wb", buffering=0)
    try:
        server.start_io(sys.stdin.buffer, stdout)
    finally:
        if not stdout.closed:
            stdout.close()
    if not getattr(server.protocol, "_shutdown", True):
        sys.exit(1)
