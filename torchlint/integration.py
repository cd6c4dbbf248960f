"""Linting one in-memory document the way `torchlint check` would lint that file: the
shared core of the flake8 plugin and the language server. Configuration is resolved
exactly as the CLI resolves it (closest pyproject.toml / torchlint.toml to the file)."""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Optional

from torchlint.checker import RuleError, check_source
from torchlint.config import CliOverrides, ConfigError, ConfigResolver
from torchlint.diagnostics import CONFIG_ERROR, INTERNAL_ERROR, Finding, tool_finding
from torchlint.linter import rule_classes_for
from torchlint.notebook import Notebook, lint_cells
from torchlint.rules.registry import SYNTAX_ERROR


@lru_cache(maxsize=8)
def resolver_for(cwd: Path) -> ConfigResolver:
    """One resolver per working directory, reused across documents (it caches config files)."""
    return ConfigResolver(CliOverrides(), cwd=cwd)


def config_error_finding(path: str, error: ConfigError) -> Finding:
    """TL002, which `ignore = ["TL000"]` (or flake8's `--ignore TL000`) does not hide."""
    return tool_finding(CONFIG_ERROR, path, f"torchlint configuration error: {error}")


def _rules_for(path: Path, resolver: Optional[ConfigResolver]) -> tuple[frozenset[str], dict[str, dict]]:
    """The codes and rule options the CLI would use for `path` (raises ConfigError)."""
    settings = (resolver or resolver_for(Path.cwd().resolve())).for_file(path)
    return settings.codes_for(path), settings.options


def lint_document(path: Path, data: bytes, resolver: Optional[ConfigResolver] = None,
                  display: Optional[str] = None) -> list[Finding]:
    """Findings for `data` as the contents of `path` (which need not exist on disk yet),
    with the rules and options the CLI would use for that path. A configuration error
    becomes one finding on line 1, so an editor shows it instead of going quiet."""
    display = display or str(path)
    try:
        codes, options = _rules_for(path, resolver)
    except ConfigError as exc:
        return [config_error_finding(display, exc)]
    rule_errors: list[RuleError] = []
    findings = check_source(display, data, rule_classes_for(codes), options=options,
                            parse_all=SYNTAX_ERROR.code in codes, rule_errors=rule_errors)
    # A failing rule costs its own findings only: the editor shows one line saying so.
    return [f for f in findings if f.code in codes] + [rule_error_finding(display, e) for e in rule_errors]


def rule_error_finding(path: str, error: RuleError) -> Finding:
    return tool_finding(INTERNAL_ERROR, path, f"torchlint {error.describe()}")


def lint_notebook_cells(path: Path, notebook: Notebook, resolver: Optional[ConfigResolver] = None) -> list[Finding]:
    """Findings for an open notebook's code cells, configured as the CLI would configure
    the .ipynb at `path`. A configuration error is reported on the first code cell."""
    try:
        codes, options = _rules_for(path, resolver)
    except ConfigError as exc:
        error = config_error_finding(notebook.path, exc)
        return [replace(error, cell=notebook.cells[0].number)] if notebook.cells else []
    rule_errors: list[RuleError] = []
    findings = lint_cells(notebook, rule_classes_for(codes), options=options, parse_all=SYNTAX_ERROR.code in codes,
                          rule_errors=rule_errors)
    first_cell = notebook.cells[0].number if notebook.cells else None
    return [f for f in findings if f.code in codes] + [
        replace(rule_error_finding(notebook.path, e), cell=first_cell) for e in rule_errors]
