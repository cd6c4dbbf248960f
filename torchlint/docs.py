"""Rule documentation: one Markdown file per rule in rules_docs/, shipped inside the
wheel as torchlint/rules_docs (see pyproject.toml)."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Optional, Protocol

SECTIONS = ("What it does", "Why is this bad?", "Example", "Use instead", "Fix safety", "References")
# Generated before References for a rule with options (scripts/generate_all.py).
OPTIONS_SECTION = "Options"



class Documented(Protocol):
    """What the docs need of a static rule or a runtime check."""

    @property
    def code(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def summary(self) -> str: ...

def docs_dir() -> Optional[Path]:
    here = Path(__file__).resolve().parent
    for candidate in (here / "rules_docs", here.parent / "rules_docs"):
        if candidate.is_dir():
            return candidate
    return None


@lru_cache(maxsize=None)
def rule_doc(code: str) -> Optional[str]:
    directory = docs_dir()
    if directory is None:
        return None
    matches = sorted(directory.glob(f"{code}-*.md"))
    return matches[0].read_text(encoding="utf-8") if matches else None


def doc_sections(markdown: str) -> dict[str, str]:
    sections: dict[str, str] = {}
    current = None
    buf: list[str] = []
    for line in markdown.splitlines():
        m = re.match(r"^##\s+(.*?)\s*$", line)
        if m:
            if current is not None:
                sections[current] = "\n".join(buf).strip()
            current, buf = m.group(1), []
        elif current is not None:
            buf.append(line)
    if current is not None:
        sections[current] = "\n".join(buf).strip()
    return sections


def _strip_inline_markdown(text: str) -> str:
    """Markdown inline syntax removed; code spans keep their content verbatim (`2**24`
    must not turn into emphasis)."""
    parts = re.split(r"`([^`]*)`", text)  # odd indices: code span contents
    for i in range(0, len(parts), 2):
        prose = re.sub(r"\[([^\]]*)\]\(([^)]*)\)", r"\1 (\2)", parts[i])  # plain text has no links
        # Only `**bold**` and `*emphasis*`: `__x__` is far likelier a dunder than emphasis here.
        prose = re.sub(r"\*\*(\S(?:.*?\S)?)\*\*", r"\1", prose)
        parts[i] = re.sub(r"(?<![\w*])\*(\S(?:[^*]*?\S)?)\*(?![\w*])", r"\1", prose)
    return "".join(parts)


def plain_text(markdown: str) -> str:
    """One line of plain text (SARIF `text` fields, LSP messages): no code spans, links,
    emphasis or line breaks."""
    return re.sub(r"\s+", " ", _strip_inline_markdown(markdown)).strip()


def clip_at_sentence(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters at the end of a sentence (or, when the
    first sentence alone is too long, at a word boundary, marked with an ellipsis)."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    ends = [m.end() for m in re.finditer(r"[.!?](?=\s|$)", head)]
    if ends:
        return head[:ends[-1]]
    cut = head[: limit - 1].rsplit(" ", 1)[0].rstrip(" ,;:")
    return cut + "\u2026"


def full_description(rule: Documented, limit: int = 1024) -> str:
    doc = rule_doc(rule.code)
    if doc is None:
        return plain_text(rule.summary)
    sections = doc_sections(doc)
    text = plain_text(" ".join(filter(None, [sections.get("What it does"), sections.get("Why is this bad?")])))
    return clip_at_sentence(text or plain_text(rule.summary), limit)


def help_text(rule: Documented) -> tuple[str, str]:
    """(plain text, markdown) for SARIF's rule help."""
    doc = rule_doc(rule.code) or f"# {rule.code} ({rule.name})\n\n{rule.summary}\n"
    return _plain_multiline(doc), doc


def _plain_multiline(markdown: str) -> str:
    lines = [re.sub(r"^#+\s*", "", line) for line in markdown.splitlines() if not line.startswith("```")]
    return _strip_inline_markdown("\n".join(lines)).strip()  # code spans may wrap across lines
