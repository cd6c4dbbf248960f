"""Output formats. Each takes the sorted findings and returns the text to print."""

from __future__ import annotations

from typing import Callable

from torchlint.diagnostics import Finding
from torchlint.output import github, json_format, sarif, text

FORMATS: dict[str, Callable[..., str]] = {
    "full": text.render_full,
    "concise": text.render_concise,
    "json": json_format.render,
    "sarif": sarif.render,
    "github": github.render,
}

__all__ = ["FORMATS", "Finding"]
