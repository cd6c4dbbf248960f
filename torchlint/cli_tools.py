"""`torchlint clean` and `torchlint check --show-settings`, as in ruff, beside cli.py (which
holds the commands' options). It imports only click and the config, so that it adds
nothing to the start-up of a cli.py whose other imports are lazy."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path

import click

from torchlint.config import CliOverrides, ConfigError, ConfigResolver, Settings

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Iterator

# The first line of the .gitignore the cache writes into its directory (cache.py): a
# directory without it was not made by torchlint, and `clean` leaves it alone.
_MARKER = "# Automatically created by torchlint."
_PRUNED = frozenset({".git", ".hg", ".svn", "node_modules"})
CACHE_DIR_NAME = ".torchlint_cache"  # cache.CACHE_DIR_NAME, not imported for a name (a test keeps them equal)


def is_torchlint_cache(path: Path) -> bool:
    if path.is_symlink() or not path.is_dir():
        return False
    try:
        with open(path / ".gitignore", encoding="utf-8") as handle:
            return handle.readline().rstrip("\n") == _MARKER
    except (OSError, UnicodeDecodeError):
        return False


def cache_dirs(root: Path, configured: list[Path]) -> Iterator[Path]:
    """torchlint's cache directories: `.torchlint_cache` anywhere under `root` (symlinks not
    followed) and the configured `cache-dir`s, each only if torchlint made it."""
    seen: set[str] = set()
    for directory in configured:
        if is_torchlint_cache(directory):
            seen.add(os.path.realpath(directory))
            yield directory
    for top, dirs, _ in os.walk(root):
        for name in dirs:
            path = Path(top) / name
            if name == CACHE_DIR_NAME and os.path.realpath(path) not in seen and is_torchlint_cache(path):
                seen.add(os.path.realpath(path))
                yield path
        dirs[:] = [d for d in dirs if d not in _PRUNED and d != CACHE_DIR_NAME]


@click.command(short_help="Remove torchlint's caches under the current directory.")
def clean() -> None:
    """Remove the `.torchlint_cache` directories under the current directory and the
    `cache-dir` its config names (only directories torchlint created), as `ruff clean`."""
    cwd = Path.cwd()
    configured = []
    try:
        settings = ConfigResolver(CliOverrides(), cwd=cwd).default
    except ConfigError as exc:  # a broken config must not stop the cleaning: say so
        click.echo(f"warning: {exc}; removing the {CACHE_DIR_NAME} directories only", err=True)
    else:
        if settings.cache_dir is not None:
            cache_dir = Path(settings.cache_dir)
            configured.append(cache_dir if cache_dir.is_absolute() else Path(settings.root) / cache_dir)
    removed = 0
    for path in list(cache_dirs(cwd, configured)):
        click.echo(f"Removing cache at: {_shown(path, cwd)}")
        try:
            shutil.rmtree(path)
        except OSError as exc:
            click.echo(f"error: cannot remove {_shown(path, cwd)}: {exc.strerror or exc}", err=True)
            raise click.exceptions.Exit(2) from None
        removed += 1
    if not removed:
        click.echo("No cache found.")


def _shown(path: Path, cwd: Path) -> str:
    try:
        return str(path.resolve().relative_to(cwd.resolve())) or "."
    except ValueError:
        return str(path)


def show_settings(resolver: ConfigResolver, path: str) -> str:
    """The settings torchlint resolved for `path` (a file or a directory), one field a line."""
    target = Path(path)
    settings = resolver.for_directory(target) if target.is_dir() else resolver.for_file(target)
    lines = [f"Resolved settings for: {json.dumps(path)}",
             f"Settings path: {json.dumps(str(settings.config_path)) if settings.config_path else '(none: the defaults)'}",
             ""]
    for field in dataclasses.fields(Settings):
        lines.append(f"{field.name} = {_value(getattr(settings, field.name))}")
    return "\n".join(lines)


def _value(value: Any) -> str:
    if isinstance(value, (frozenset, set)):
        return json.dumps(sorted(value))
    if isinstance(value, Path):
        return json.dumps(str(value))
    if isinstance(value, tuple) and value and all(isinstance(v, tuple) and len(v) == 2 for v in value):
        return json.dumps({pattern: sorted(codes) for pattern, codes in value})  # per-file-ignores
    return json.dumps(value, default=_jsonable, sort_keys=True)


def _jsonable(value: Any) -> Any:
    if isinstance(value, (frozenset, set)):
        return sorted(value)
    return str(value)


def fix_summary(report) -> str:  # type: ignore[no-untyped-def]
    """ruff's `--show-fixes` listing: fixes applied per file and rule."""
    from torchlint import catalog

    total = sum(report.applied.values())
    if not total:
        return "No fixes applied.\n"
    lines = [f"Fixed {total} finding{'s' if total != 1 else ''}:"]
    for fixed in report.files:
        lines.append(f"- {fixed.display}:")
        for code, count in sorted(fixed.applied.items()):
            lines.append(f"    {count} × {code} ({catalog.by_code()[code].name})")
    return "\n".join(lines) + "\n"
