"""`torchlint check --watch`, as `ruff check --watch`: clear the screen, lint, wait for a
change to a Python file, a notebook or a config file, lint again; Ctrl-C exits 0. The file
events come from `watchfiles` (the `watch` extra), imported only here."""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

import click

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable, Sequence

CLEAR_SCREEN = "\x1b[2J\x1b[H"
# What can change a report: sources, and the files settings and excludes come from.
WATCHED_SUFFIXES = (".py", ".pyi", ".ipynb", ".toml")
WATCHED_NAMES = (".gitignore",)


def relevant(path: str) -> bool:
    name = Path(path).name
    return name.endswith(WATCHED_SUFFIXES) or name in WATCHED_NAMES


def watch(paths: Sequence[str], lint_once: Callable[[], None], refuse: bool = False) -> None:
    """Run `lint_once` now and after every relevant change under `paths`, until Ctrl-C.
    `refuse`: the run reads stdin or prints no report (--show-files, --add-noqa)."""
    if refuse or "-" in paths:
        click.echo("error: --watch cannot be combined with stdin, --show-files or --add-noqa", err=True)
        raise click.exceptions.Exit(2)
    try:
        import watchfiles
    except ImportError:
        click.echo('error: --watch needs watchfiles; install it with `pip install "torchlint[watch]"`', err=True)
        raise click.exceptions.Exit(2) from None
    # watchfiles logs "KeyboardInterrupt caught, stopping watch" on Ctrl-C: ruff exits quietly.
    logging.getLogger("watchfiles").addHandler(logging.NullHandler())
    logging.getLogger("watchfiles").propagate = False
    targets = list(paths) or ["."]
    ignored = tuple(watchfiles.DefaultFilter.ignore_dirs) + (".torchlint_cache",)
    only_ours = watchfiles.DefaultFilter(ignore_dirs=ignored)
    # The first lint runs once the watcher is set up (the first, empty, timeout), so that a
    # change made as soon as "Watching for file changes." is printed is never missed.
    events = watchfiles.watch(*targets, watch_filter=lambda change, path: only_ours(change, path) and relevant(path),
                              raise_interrupt=False, debounce=100, step=20, rust_timeout=100, yield_on_timeout=True)
    try:
        started = False
        for changes in events:
            if not started or changes:
                _run(lint_once, "File change detected..." if started else "Starting linter in watch mode...")
                started = True
    except KeyboardInterrupt:  # Ctrl-C while linting: the same quiet exit as while waiting
        pass
    raise click.exceptions.Exit(0)


def _run(lint_once: Callable[[], None], banner: str) -> None:
    if sys.stdout is not None and sys.stdout.isatty():
        click.echo(CLEAR_SCREEN, nl=False)
    click.echo(f"[{time.strftime('%H:%M:%S')}] {banner}", err=True)
    try:
        lint_once()
    except click.exceptions.Exit:  # findings (1) or an error (2): keep watching
        pass
    click.echo("Watching for file changes.", err=True)
    if sys.stdout is not None:
        sys.stdout.flush()
