"""The language server's answers that go beyond diagnostics: the fix-all edit
(`source.fixAll.torchlint`, also the `torchlint.server.fixAll` command), the hover text of a
diagnostic, and a rule's documentation (the `torchlint.server.ruleDoc` command).

Fix-all is `torchlint check --fix` on the editor's text: the same fix engine (fixed point,
re-lint between passes, nothing applied when a pass would not parse), the same `fixable` /
`unfixable` settings of the file's config, unsafe fixes only when the client's `unsafeFixes`
or the config's `unsafe-fixes` allows them. LibCST is imported only when a fix is asked for."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional, Sequence

from lsprotocol import types
from pygls.workspace import TextDocument

from torchlint import catalog
from torchlint.api import lint_document
from torchlint.config import ConfigResolver
from torchlint.diagnostics import Finding
from torchlint.docs import doc_sections, plain_text, rule_doc
from torchlint.lsp_positions import DocumentIndex
from torchlint.output.docs_url import rule_url

SOURCE = "torchlint"
_SEVERITY = {"error": types.DiagnosticSeverity.Error, "warning": types.DiagnosticSeverity.Warning,
             "info": types.DiagnosticSeverity.Information}
FIX_ALL_KIND = "source.fixAll.torchlint"
FIX_ALL_COMMAND = "torchlint.server.fixAll"
RULE_DOC_COMMAND = "torchlint.server.ruleDoc"


def kind_wanted(kind: str, only: Optional[Sequence[str]]) -> bool:
    """LSP's `only` filter is hierarchical: `source` and `source.fixAll` both ask for
    `source.fixAll.torchlint`."""
    kind = getattr(kind, "value", kind)  # lsprotocol's kinds are str enums
    wanted = [getattr(w, "value", w) for w in only] if only is not None else None
    return wanted is None or any(kind == w or kind.startswith(f"{w}.") for w in wanted)


def fix_allowed(finding: Finding, fixable: frozenset[str], unsafe: bool) -> bool:
    fix = finding.fix
    return fix is not None and bool(fix.edits) and finding.code in fixable and (fix.safe or unsafe)


def fix_all_edit(document: TextDocument, path: Path, resolver: ConfigResolver,
                 findings: list[Finding], unsafe: bool) -> Optional[types.TextEdit]:
    """One edit replacing the document with its fixed text, or None when nothing changes
    (no allowed fix, or a pass that would break the code)."""
    settings = resolver.for_file(path)
    unsafe = unsafe or settings.unsafe_fixes
    if not any(fix_allowed(f, settings.fixable, unsafe) for f in findings):
        return None
    from torchlint.fix.engine import fix_text

    text = document.source

    def lint(current: str) -> list[Finding]:
        return lint_document(path, current.encode("utf-8", "surrogatepass"), resolver)

    outcome = fix_text(text, findings, lint, lambda f: fix_allowed(f, settings.fixable, unsafe))
    if outcome.error is not None or outcome.text == text:
        return None
    index = DocumentIndex(document)
    end = index.to_client(len(index.lines) - 1, len(index.lines[-1])) if index.lines else types.Position(line=0, character=0)
    return types.TextEdit(range=types.Range(start=types.Position(line=0, character=0), end=end), new_text=outcome.text)


def fix_all_action(uri: str, edit: types.TextEdit) -> types.CodeAction:
    return types.CodeAction(title="torchlint: fix all auto-fixable problems", kind=FIX_ALL_KIND,
                            edit=types.WorkspaceEdit(changes={uri: [edit]}))


def summary_markdown(code: str) -> Optional[str]:
    """`**TL101** (name, severity): summary` and its docs link, or None for an unknown code."""
    rule = catalog.lookup(code)
    if rule is None:
        return None
    return (f"**{rule.code}** ({rule.name}, {rule.severity}): {rule.summary}\n\n"
            f"[Documentation]({rule_url(rule.code, rule.name)})")


def diagnostic_hover(findings: list[Finding], row: int, column: int) -> Optional[str]:
    """The hover text at 1-based (row, column): for each finding whose range holds the
    position, its message, what to do, and the rule's "What it does" from its docs."""
    parts = []
    for f in findings:
        if not ((f.row, f.col) <= (row, column) <= (f.end_row, f.end_col)):
            continue
        summary = summary_markdown(f.code)
        if summary is None:
            continue
        lines = [summary, "", f.message]
        if f.help:
            lines.append(f"\n*help:* {f.help}")
        what = _what_it_does(f.code)
        if what:
            lines += ["", what]
        parts.append("\n".join(lines))
    return "\n\n---\n\n".join(parts) or None


def _what_it_does(code: str) -> Optional[str]:
    markdown = rule_doc(code)
    if markdown is None:
        return None
    section = doc_sections(markdown).get("What it does")
    return plain_text(section).strip() if section else None


def rule_doc_payload(arguments: Any) -> Optional[dict[str, str]]:
    """The `torchlint.server.ruleDoc` command: `[code]` or `[{"code": ...}]` gives the rule's
    code, name, docs URL and full Markdown page; None for an unknown code."""
    first = arguments[0] if isinstance(arguments, list) and arguments else arguments
    code = first.get("code") if isinstance(first, dict) else first
    if not isinstance(code, str):
        return None
    rule = catalog.lookup(code.strip())
    if rule is None:
        return None
    return {"code": rule.code, "name": rule.name, "url": rule_url(rule.code, rule.name),
            "markdown": rule_doc(rule.code) or f"# {rule.code} {rule.name}\n\n{rule.summary}\n"}


def uri_argument(arguments: Any) -> Optional[str]:
    """`[uri]`, `[{"uri": ...}]` or `[{"textDocument": {"uri": ...}}]`."""
    first = arguments[0] if isinstance(arguments, list) and arguments else arguments
    if isinstance(first, str):
        return first
    if isinstance(first, dict):
        if isinstance(first.get("uri"), str):
            return first["uri"]
        document = first.get("textDocument")
        if isinstance(document, dict) and isinstance(document.get("uri"), str):
            return document["uri"]
    return None


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
