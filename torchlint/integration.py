"""Linting one in-memory document the way `torchlint check` would lint that file: the
shared core of the flake8 plugin and the language server. Configuration is resolved
exactly as the CLI resolves it (closest pyproject.toml / torchlint.toml to the file)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Optional

from torchlint.checker import check_source
from torchlint.config import CliOverrides, ConfigError, ConfigResolver
from torchlint.diagnostics import Finding
from torchlint.linter import rule_classes_for
from torchlint.rules.registry import SYNTAX_ERROR


@lru_cache(maxsize=8)
def resolver_for(cwd: Path) -> ConfigResolver:
    """One resolver per working directory, reused across documents (it caches config files)."""
    return ConfigResolver(CliOverrides(), cwd=cwd)


def config_error_finding(path: str, error: ConfigError) -> Finding:
    return Finding(code=SYNTAX_ERROR.code, name=SYNTAX_ERROR.name, path=path, row=1, col=1, end_row=1,
                   end_col=2, severity="error", message=f"torchlint configuration error: {error}")


def lint_document(path: Path, data: bytes, resolver: Optional[ConfigResolver] = None,
                  display: Optional[str] = None) -> list[Finding]:
    """Findings for `data` as the contents of `path` (which need not exist on disk yet),
    with the rules and options the CLI would use for that path. A configuration error
    becomes one finding on line 1, so an editor shows it instead of going quiet."""
    display = display or str(path)
    try:
        resolver = resolver or resolver_for(Path.cwd().resolve())
        settings = resolver.for_file(path)
    except ConfigError as exc:
        return [config_error_finding(display, exc)]
    codes = settings.codes_for(path)
    findings = check_source(display, data, rule_classes_for(codes), options=settings.options,
                            parse_all=SYNTAX_ERROR.code in codes)
    return [f for f in findings if f.code in codes]
