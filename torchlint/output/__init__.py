"""Output formats. Each takes the sorted findings and returns the text to print."""

from __future__ import annotations

from typing import Callable

from torchlint.diagnostics import Finding
from torchlint.output import azure, github, gitlab, grouped, json_format, json_lines, junit, pylint, rdjson, sarif, text

FORMATS: dict[str, Callable[..., str]] = {
    "full": text.render_full,
    "concise": text.render_concise,
    "json": json_format.render,
    "sarif": sarif.render,
    "github": github.render,
    "gitlab": gitlab.render,
    "junit": junit.render,
    "pylint": pylint.render,
    "json-lines": json_lines.render,
    "rdjson": rdjson.render,
    "grouped": grouped.render,
    "azure": azure.render,
}
# Formats whose paths are relative to the repository root (what the CI service resolves
# them against), not to the working directory.
ROOT_RELATIVE_FORMATS = ("sarif", "github", "gitlab", "azure")

__all__ = ["FORMATS", "ROOT_RELATIVE_FORMATS", "Finding"]
