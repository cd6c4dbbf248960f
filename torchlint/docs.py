"""Rule documentation: one Markdown file per rule in rules_docs/, shipped inside the
wheel as torchlint/rules_docs (see pyproject.toml)."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Optional

from torchlint.rules.base import Rule

SECTIONS = ("What it does", "Why is this bad?", "Example", "Use instead", "Fix safety", "References")


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


def _plain(markdown: str) -> str:
    text = re.sub(r"`([^`]*)`", r"\1", markdown)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"\s+", " ", text).strip()


def full_description(rule: type[Rule], limit: int = 1024) -> str:
    doc = rule_doc(rule.code)
    if doc is None:
        return rule.summary
    sections = doc_sections(doc)
    text = _plain(" ".join(filter(None, [sections.get("What it does"), sections.get("Why is this bad?")])))
    text = text or rule.summary
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def help_text(rule: type[Rule]) -> tuple[str, str]:
    """(plain text, markdown) for SARIF's rule help."""
    doc = rule_doc(rule.code) or f"# {rule.code} ({rule.name})\n\n{rule.summary}\n"
    return _plain_multiline(doc), doc


def _plain_multiline(markdown: str) -> str:
    lines = []
    for line in markdown.splitlines():
        if line.startswith("```"):
            continue
        line = re.sub(r"^#+\s*", "", line)
        lines.append(re.sub(r"`([^`]*)`", r"\1", line))
    return "\n".join(lines).strip()
