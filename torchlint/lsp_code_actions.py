"""The language server's code actions and hover, apart from its document bookkeeping
(language_server.py): quick fixes, "Disable TLxxx for this line", fix-all, and hover on a
diagnostic or on a code in a `# noqa` comment."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional, Protocol

from lsprotocol import types
from pygls.workspace import TextDocument
from pygls.workspace.position_codec import ServerTextPosition, ServerTextRange

from torchlint import catalog
from torchlint.api import lint_document
from torchlint.lsp_actions import (FIX_ALL_KIND, SOURCE, diagnostic_hover, fix_all_action, fix_all_edit, kind_wanted,
                                   summary_markdown, to_diagnostic)
from torchlint.lsp_positions import DocumentIndex
from torchlint.notebook import is_notebook



class TorchlintServer(Protocol):
    """What the actions need of the server (language_server.TorchlintServer)."""

    findings: dict[str, list]
    client_settings: Any

    def document(self, uri: str) -> TextDocument: ...

    def uri_path(self, uri: str, untitled_name: str) -> Optional[Path]: ...

    def configure(self, path: Path, uri: str = "") -> tuple[Any, list]: ...

    def report_internal_error(self, path: Path, exc: Exception) -> None: ...


class Unreadable(Exception):
    """A URI the editor has not opened whose file torchlint will not read (a FIFO, a device,
    too large, undecodable); the message says why."""



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
    unsafe = server.client_settings.for_uri(uri).unsafe_fixes
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
        quick_fix = kind_wanted(types.CodeActionKind.QuickFix, wanted)
        if f.fix and f.fix.edits and (f.fix.safe or unsafe) and quick_fix:
            fix = f.fix
            actions.append(types.CodeAction(
                title=f"{fix.message or 'Fix'} ({f.code})" + ("" if fix.safe else f" [{fix.applicability}]"),
                kind=types.CodeActionKind.QuickFix, diagnostics=related, is_preferred=fix.safe,
                edit=types.WorkspaceEdit(changes={uri: [
                    types.TextEdit(range=index.range(*e.start, *e.end), new_text=e.content) for e in fix.edits]})))
        if quick_fix:
            edit = noqa_edit(index.document, f.row, f.code, index)
            if edit is not None:
                actions.append(types.CodeAction(
                    title=f"Disable {f.code} for this line", kind=types.CodeActionKind.QuickFix,
                    diagnostics=related, edit=types.WorkspaceEdit(changes={uri: [edit]})))
    if kind_wanted(FIX_ALL_KIND, wanted):
        fix_all = document_fix_all(server, uri, index.document)
        if fix_all is not None:
            actions.append(fix_all_action(uri, fix_all))
    return actions


def document_fix_all(server: TorchlintServer, uri: str, document: TextDocument) -> Optional[types.TextEdit]:
    """The fix-all edit of a plain document (not a notebook cell), from a fresh lint of the
    editor's text with the file's settings; None when nothing would change."""
    path = server.uri_path(uri, "untitled.py")
    if path is None or is_notebook(str(path)):
        return None
    resolver, errors = server.configure(path, uri)
    if resolver is None:
        return None
    data = document.source.encode("utf-8", "surrogatepass")
    if len(data) > resolver.for_file(path).max_file_size:
        return None
    try:
        findings = lint_document(path, data, resolver)
        return fix_all_edit(document, path, resolver, findings, server.client_settings.for_uri(uri).unsafe_fixes)
    except Exception as exc:
        server.report_internal_error(path, exc)
        return None


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
                text = summary_markdown(span.code) if catalog.static_rule(span.code) else None
                if text is None:
                    return None
                return types.Hover(
                    contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text),
                    range=index.range(row + 1, span.start + 1, row + 1, span.end + 1))
    text = diagnostic_hover(server.findings.get(params.text_document.uri, []), row + 1, character + 1)
    if text is None:
        return None
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text))
