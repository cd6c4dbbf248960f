"""mkdocs hook: the site's pages are the repository's own files (the README as the home page,
the generated rule docs, SECURITY, CONTRIBUTING, CHANGELOG), added here rather than copied or
symlinked into docs/, so there is one copy of each and the sdist stays as it was."""

from __future__ import annotations

from pathlib import Path

from mkdocs.structure.files import File, Files

REPO = Path(__file__).resolve().parent.parent
PAGES = ("README.md", "SECURITY.md", "CONTRIBUTING.md", "CHANGELOG.md")


def site_pages() -> list[str]:
    """The pages, as paths relative to the repository root (README.md is the home page)."""
    return [*PAGES, *sorted(f"rules_docs/{p.name}" for p in (REPO / "rules_docs").glob("*.md"))]


def on_files(files: Files, config) -> Files:  # type: ignore[no-untyped-def]
    for page in site_pages():
        files.append(File.generated(config, page, abs_src_path=str(REPO / page)))
    return files
