"""Output formats. Each takes the sorted findings and returns the text to print."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, MutableMapping  # subscriptable, without importing typing

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


class _Formats(MutableMapping[str, Callable[..., str]]):
    """The renderers by format name, each module imported when its format is asked for (a
    run prints one format; importing all twelve cost more than linting a file). A renderer
    set here (a test's stand-in) takes the place of the module's."""

    def __init__(self) -> None:
        self._set: dict[str, Callable[..., str]] = {}

    def __getitem__(self, fmt: str) -> Callable[..., str]:
        if fmt in self._set:
            return self._set[fmt]
        module, attr = _RENDERERS[fmt]
        renderer: Callable[..., str] = getattr(importlib.import_module(f"{__name__}.{module}"), attr)
        return renderer

    def __setitem__(self, fmt: str, renderer: Callable[..., str]) -> None:
        if fmt not in _RENDERERS:
            raise KeyError(fmt)  # the format names are the command line's choices
        self._set[fmt] = renderer

    def __delitem__(self, fmt: str) -> None:
        del self._set[fmt]

    def __iter__(self) -> Iterator[str]:
        return iter(_RENDERERS)

    def __len__(self) -> int:
        return len(_RENDERERS)


FORMATS: MutableMapping[str, Callable[..., str]] = _Formats()
# Formats whose paths are relative to the repository root (what the CI service resolves
# them against), not to the working directory.
ROOT_RELATIVE_FORMATS = ("sarif", "github", "gitlab", "azure")

__all__ = ["FORMATS", "ROOT_RELATIVE_FORMATS", "Finding"]
