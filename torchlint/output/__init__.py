"""Output formats. Each takes the sorted findings and returns the text to print."""

from __future__ import annotations

import importlib
from typing import Callable, Iterator, Mapping

from torchlint.diagnostics import Finding

# format -> (module of this package, its renderer)
_RENDERERS: dict[str, tuple[str, str]] = {
    "full": ("text", "render_full"),
    "concise": ("text", "render_concise"),
    "json": ("json_format", "render"),
    "sarif": ("sarif", "render"),
    "github": ("github", "render"),
    "gitlab": ("gitlab", "render"),
    "junit": ("junit", "render"),
    "pylint": ("pylint", "render"),
    "json-lines": ("json_lines", "render"),
    "rdjson": ("rdjson", "render"),
    "grouped": ("grouped", "render"),
    "azure": ("azure", "render"),
}


class _Formats(Mapping[str, Callable[..., str]]):
    """The renderers by format name, each module imported when its format is asked for (a
    run prints one format; importing all twelve cost more than linting a file)."""

    def __getitem__(self, fmt: str) -> Callable[..., str]:
        module, attr = _RENDERERS[fmt]
        renderer: Callable[..., str] = getattr(importlib.import_module(f"{__name__}.{module}"), attr)
        return renderer

    def __iter__(self) -> Iterator[str]:
        return iter(_RENDERERS)

    def __len__(self) -> int:
        return len(_RENDERERS)


FORMATS: Mapping[str, Callable[..., str]] = _Formats()
# Formats whose paths are relative to the repository root (what the CI service resolves
# them against), not to the working directory.
ROOT_RELATIVE_FORMATS = ("sarif", "github", "gitlab", "azure")

__all__ = ["FORMATS", "ROOT_RELATIVE_FORMATS", "Finding"]
