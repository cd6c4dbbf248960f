"""The `torchlint` command line, following ruff's conventions."""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any, Optional

import click

from torchlint import __version__
from torchlint.budget import MIN_LINT_TIMEOUT
from torchlint.config import DEFAULT_VERIFY_TIMEOUT, CliOverrides, ConfigError, ConfigResolver, check_torch_version
from torchlint.diagnostics import Finding
from torchlint.cache import CACHE_DIR_NAME, Cache
from torchlint.cache import refusal as cache_refusal
from torchlint.files import Discovery, display_path
from torchlint.linter import FileResult, FileTask, load_source, run_tasks
from torchlint.output import FORMATS, ROOT_RELATIVE_FORMATS
from torchlint.output.ci_safe import (COMMAND_FORMATS, MARKUP_FORMATS, finish_streams, guarded_streams, neutralize,
                                      raw_streams, write_commands)
from torchlint.output.color import CHOICES as COLOR_CHOICES, Palette, use_color
from torchlint.output.sarif import truncation_warning
from torchlint.project_root import project_root
from torchlint.safe_io import format_size, printable
from torchlint.selection import SelectionError, parse_list

EXIT_FINDINGS, EXIT_ERROR = 1, 2
# Formats other programs parse: a statistics table in their place would break the reader.
STATISTICS_FORMATS = ("full", "concise", "grouped", "json")
TEXT_FORMATS = ("full", "concise", "grouped")


def _fail(message: str) -> "click.exceptions.Exit":
    click.echo(f"error: {message}", err=True)
    return click.exceptions.Exit(EXIT_ERROR)


def _selectors(value: Optional[str], option: str) -> Optional[list[str]]:
    if value is None:
        return None
    if option == "--select" and not value.strip(" ,"):
        raise _fail("--select: empty selection would disable every rule; give codes or prefixes "
                    "(e.g. `--select TL1,TL501` or `--select ALL`)")
    try:
        return parse_list([value])
    except SelectionError as exc:
        raise _fail(f"{option}: {exc}") from None


class _Group(click.Group):
    """The command group, made safe against a report that cannot be written: stdout on a
    full disk, a closed pipe or a closed descriptor exits 2 with a message, never a traceback."""

    def main(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        # Every line torchlint prints passes the workflow-command filter (output/ci_safe.py).
        with guarded_streams():
            try:
                super().main(*args, **kwargs)
                code: Any = 0
            except SystemExit as exc:
                code = exc.code
            except OSError as exc:
                code = _output_failed(exc)
            try:
                finish_streams()
                if sys.stdout is not None:
                    sys.stdout.flush()
            except (OSError, ValueError) as exc:
                code = _output_failed(exc)
        sys.exit(code)


def _output_failed(exc: BaseException) -> int:
    try:  # keep the interpreter's own flush at exit from failing again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
    except OSError:
        pass
    try:
        sys.stderr.write(f"error: cannot write the report to standard output: {exc}\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass
    return EXIT_ERROR


def _finite_seconds(ctx: click.Context, param: click.Parameter, value: Optional[float]) -> Optional[float]:
    if value is not None and not (1 <= value <= 86_400):  # also false for nan
        raise click.BadParameter("give a number of seconds between 1 and 86400")
    return value


def _lint_seconds(ctx: click.Context, param: click.Parameter, value: Optional[float]) -> Optional[float]:
    if value is not None and not (MIN_LINT_TIMEOUT <= value <= 86_400):  # also false for nan
        raise click.BadParameter(f"give a number of seconds between {MIN_LINT_TIMEOUT:g} and 86400")
    return value


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="torchlint", message="%(prog)s %(version)s")
def main() -> None:
    """torchlint: a linter for PyTorch code."""


@main.command(short_help="Check files or directories for PyTorch pitfalls.")
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@click.option("--select", help="Comma-separated rule codes or prefixes to enable (TL1, TL101, ALL); replaces the default set.")
@click.option("--extend-select", help="Rule codes or prefixes to enable in addition to the selected ones.")
@click.option("--ignore", help="Rule codes or prefixes to disable.")
@click.option("--output-format", type=click.Choice(sorted(FORMATS)), default="full", show_default=True)
@click.option("-o", "--output-file", type=click.Path(dir_okay=False, writable=True), help="Write the report to this file.")
@click.option("--statistics", is_flag=True,
              help="Show counts for every rule with findings (with --output-format full, concise or json).")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings (errors still exit 2).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path), help="Use this config file for every file.")
@click.option("--isolated", is_flag=True, help="Ignore all configuration files.")
@click.option("--exclude", help="Comma-separated globs to exclude (replaces the default excludes).")
@click.option("--extend-exclude", help="Comma-separated globs to exclude in addition.")
@click.option("--force-exclude", is_flag=True, help="Apply excludes to paths passed explicitly too (for pre-commit).")
@click.option("--respect-gitignore/--no-respect-gitignore", default=None, help="Skip files that .gitignore ignores (default: on).")
@click.option("--stdin-filename", help="The name of the file when passing source on stdin with `-`.")
@click.option("--show-files", is_flag=True, help="List the files that would be checked, then exit.")
@click.option("-q", "--quiet", is_flag=True, help="Print findings only, no summary.")
@click.option("--color", type=click.Choice(COLOR_CHOICES), default="auto", show_default=True,
              help="Colour text output: auto = on a terminal, unless NO_COLOR is set (FORCE_COLOR forces it).")
@click.option("--project-root", "project_root_option", type=click.Path(file_okay=False, exists=True, path_type=Path),
              help="Directory that SARIF URIs and GitHub annotation paths are relative to (default: the git root).")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, help="Worker processes (default: all cores).")
@click.option("--no-cache", is_flag=True, help="Do not read or write the cache.")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), help="Cache directory (default: .torchlint_cache next to the config).")
@click.option("--verify", is_flag=True, help="Run a probe for each finding under the installed torch (needs torchlint[verify]).")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto", show_default=True,
              help="Where --verify runs probes: auto = CPU, plus CUDA when available.")
@click.option("--max-file-size", help="Skip (and report) files larger than this, e.g. 5MB (default: 5 MiB).")
@click.option("--lint-timeout", type=float, callback=_lint_seconds, default=None,
              help="CPU seconds one file may take to lint; a slower file is reported as TL000 and skipped "
                   "(default 60; config: lint-timeout, which can only lower it).")
@click.option("--verify-timeout", type=float, callback=_finite_seconds, default=None,
              help="Seconds one probe may run before it counts as an error (default 120; config: verify-timeout).")
@click.option("--verify-memory", type=click.IntRange(min=256), default=None,
              help="MiB the --verify worker's processes may use together (default 2048; config: verify-memory).")
@click.option("--verify-budget", type=float, callback=_finite_seconds, default=None,
              help="Seconds all of --verify may take; findings left then are skipped (default 900; config: verify-budget).")
@click.option("--verified-only", is_flag=True, help="With --verify: keep only findings whose verdict is confirmed.")
@click.option("--verify-unsandboxed", is_flag=True,
              help="With --verify: run the checked code even where the OS sandbox cannot be set up. Only for code "
                   "you trust; no config file can set this.")
@click.option("--show-sandbox", is_flag=True, help="Print the --verify sandbox layers this machine provides, then exit.")
@click.option("--fix/--no-fix", "fix", default=None, help="Apply fixes (default: the `fix` config key, off).")
@click.option("--unsafe-fixes/--no-unsafe-fixes", "unsafe_fixes", default=None,
              help="Also apply fixes marked unsafe (they may change behaviour; see each rule's Fix safety).")
@click.option("--diff", is_flag=True, help="Print the fixes as a unified diff instead of writing them; exit 1 if there are any.")
@click.option("--fix-only", is_flag=True, help="Apply fixes and report nothing else (exit 0 unless an error occurs).")
@click.option("--show-fixes", is_flag=True, help="List the fixes applied, per file and rule.")
@click.option("--add-noqa", is_flag=True, help="Append `# noqa: TLxxx` to the line of every finding.")
@click.option("--torch-version", help='The oldest torch the code must run on ("2.4"): decides what the TL9xx migration rules call deprecated.')
def check(paths: tuple[str, ...], select: Optional[str], extend_select: Optional[str], ignore: Optional[str],
          output_format: str, output_file: Optional[str], statistics: bool, exit_zero: bool,
          config_path: Optional[Path], isolated: bool, exclude: Optional[str], extend_exclude: Optional[str],
          force_exclude: bool, respect_gitignore: Optional[bool], stdin_filename: Optional[str],
          show_files: bool, quiet: bool, color: str, project_root_option: Optional[Path],
          jobs: Optional[int], no_cache: bool, cache_dir: Optional[Path],
          verify: bool, device: str, verify_timeout: Optional[float], verify_memory: Optional[int],
          verify_budget: Optional[float], verified_only: bool, verify_unsandboxed: bool, show_sandbox: bool,
          max_file_size: Optional[str], lint_timeout: Optional[float],
          fix: Optional[bool], unsafe_fixes: Optional[bool], diff: bool, fix_only: bool, show_fixes: bool,
          add_noqa: bool, torch_version: Optional[str]) -> None:
    """Check PATHS (files or directories; default: .) for PyTorch pitfalls."""
    if verified_only and not verify:
        raise _fail("--verified-only needs --verify")
    if verify_unsandboxed and not verify:
        raise _fail("--verify-unsandboxed needs --verify")
    if show_sandbox:
        _require_torch()
        from torchlint.verify.runner import describe_sandbox

        ok, text = describe_sandbox(unsandboxed=verify_unsandboxed)
        click.echo(text)
        raise click.exceptions.Exit(0 if ok else 1)
    if statistics and output_format not in STATISTICS_FORMATS:
        raise _fail(f"--statistics cannot be combined with --output-format {output_format}; "
                    f"use one of {', '.join(STATISTICS_FORMATS)}")
    if add_noqa and (fix or diff or fix_only):
        raise _fail("--add-noqa cannot be combined with --fix, --diff or --fix-only")
    if torch_version is not None:
        try:
            check_torch_version(torch_version, "--torch-version")
        except ConfigError as exc:
            raise _fail(str(exc)) from None
    if verify:
        _require_torch()  # fail before linting, not after
    cli = CliOverrides(
        select=_selectors(select, "--select"),
        extend_select=_selectors(extend_select, "--extend-select") or [],
        ignore=_selectors(ignore, "--ignore") or [],
        exclude=[p for p in exclude.split(",") if p] if exclude is not None else None,
        extend_exclude=[p for p in (extend_exclude or "").split(",") if p],
        respect_gitignore=respect_gitignore, max_file_size=max_file_size, lint_timeout=lint_timeout,
        verify_memory=verify_memory, verify_budget=verify_budget, verify_timeout=verify_timeout,
        fix=True if (fix_only or diff) else fix,
        unsafe_fixes=unsafe_fixes,
        torch_version=torch_version,
    )
    cwd = Path.cwd().resolve()
    try:
        resolver = ConfigResolver(cli, config_path=config_path, isolated=isolated)
        # Like ruff: `--stdin-filename` with no paths reads the source from stdin too.
        path_list = list(paths) or (["-"] if stdin_filename else ["."])
        tasks, missing = _build_tasks(path_list, resolver, cwd, stdin_filename, force_exclude)
    except ConfigError as exc:
        raise _fail(str(exc)) from None
    if not output_file and not show_files and sys.stdout is None:
        raise _fail("standard output is closed; write the report to a file with -o FILE")
    _warn_empty_directories(path_list, tasks)

    if show_files:
        for task in sorted(tasks, key=lambda t: t.display):
            click.echo(task.display)
        _report_missing(missing)
        return

    # --verify builds probes from the findings: lint afresh rather than trust cached ones.
    cache_root = None if no_cache else _cache_root(cache_dir, resolver)
    results = _run(tasks, jobs=jobs, cache_root=cache_root, resolver=resolver, read_cache=not verify)
    if add_noqa:
        _add_noqa(tasks, results)
        return
    fix_report = _fix(tasks, results, resolver, write=not diff, show_fixes=show_fixes)
    if diff or fix_only:
        _finish_fix_only(tasks, results, fix_report, diff=diff)
        return
    findings, parse_errors, internal_errors = _collect(tasks, results)

    if verify and findings:
        from torchlint.verify.runner import DEFAULT_BUDGET, DEFAULT_MEMORY, verify_findings

        settings = resolver.default
        files = _Sources(tasks)
        memory = settings.verify_memory  # the command line's value, else the config's (lower only)
        verify_findings(findings, device=device, timeout=settings.verify_timeout or DEFAULT_VERIFY_TIMEOUT,
                        cache_dir=cache_root, sources=lambda path: getattr(files.get(path), "text", None),
                        memory_limit=memory * 2**20 if memory else DEFAULT_MEMORY,
                        budget=settings.verify_budget or DEFAULT_BUDGET,
                        unsandboxed=verify_unsandboxed)
        if verified_only:
            findings = [f for f in findings if f.verify and f.verify["verdict"] == "confirmed"]

    over_limit = truncation_warning(len(findings)) if output_format == "sarif" else None
    if over_limit:
        click.echo(f"warning: {over_limit}", err=True)
    palette = Palette(output_format in TEXT_FORMATS
                      and use_color(color, None if output_file else sys.stdout))
    root = project_root(cwd, project_root_option) if output_format in ROOT_RELATIVE_FORMATS else cwd
    enabled = sorted({code for task in tasks for code in task.codes} or resolver.default.enabled)
    # With a path missing, the run did not check everything: no "All checks passed!".
    text = _render(output_format, findings, tasks, parse_errors, cwd, statistics, quiet or bool(missing and not findings),
                   root=root, rules=enabled, palette=palette)
    if fix_report is not None and fix_report.stdin_output is not None:
        with raw_streams():  # the user's own source, byte for byte
            click.echo(fix_report.stdin_output, nl=False)  # like ruff: the fixed source on stdout,
        click.echo(text, nl=False, err=True)  # the findings left on stderr
        text = ""
    elif output_format in TEXT_FORMATS and not quiet and not statistics:
        text += _fix_hint(findings, resolver, fix_report)
    if output_file:
        write_output_file(output_file, text, [cwd, project_root(cwd, project_root_option)])
    elif output_format in COMMAND_FORMATS:
        write_commands(text)
    elif text:
        click.echo(text, nl=False, color=palette.enabled or None)

    _report_missing(missing)
    if internal_errors or (fix_report is not None and fix_report.errors):
        raise click.exceptions.Exit(EXIT_ERROR)
    if findings and not exit_zero:
        raise click.exceptions.Exit(EXIT_FINDINGS)


def write_output_file(path: str, text: str, roots: list[Path]) -> None:
    """The report to `-o PATH`, never through a symlink the checked tree planted (exit 2)."""
    from torchlint.output.output_file import OutputFileError, write_report

    try:
        write_report(path, text, roots)
    except OutputFileError as exc:
        raise _fail(f"--output-file {printable(path)}: {exc}") from None
    except OSError as exc:
        raise _fail(f"--output-file {printable(path)}: {exc.strerror or exc}") from None


def _report_missing(missing: list[str]) -> None:
    for path in missing:
        click.echo(f"error: {printable(path)}: no such file or directory", err=True)
    if missing:
        raise click.exceptions.Exit(EXIT_ERROR)


def _warn_empty_directories(paths: list[str], tasks: list[FileTask]) -> None:
    """ruff warns when a directory holds nothing to check; a silent "All checks passed!"
    for a typo'd or fully excluded directory would read as a clean bill of health."""
    checked = [os.path.abspath(t.path) for t in tasks if t.path != "-"]
    for raw in paths:
        if raw == "-" or not os.path.isdir(raw):
            continue
        prefix = os.path.join(os.path.abspath(raw), "")
        if not any(p.startswith(prefix) for p in checked):
            click.echo(f"warning: no Python files found under {printable(raw)}", err=True)


def _fix_policy(resolver: ConfigResolver):  # type: ignore[no-untyped-def]
    from torchlint.fix.policy import FixPolicy

    def policy_for(task: FileTask) -> FixPolicy:
        settings = resolver.for_file(Path(task.display if task.path == "-" else task.path))
        return FixPolicy(settings.fixable if settings.fix else frozenset(), settings.unsafe_fixes)

    return policy_for


def _fix(tasks: list[FileTask], results: list[FileResult], resolver: ConfigResolver, *, write: bool,
         show_fixes: bool):  # type: ignore[no-untyped-def]
    """Apply fixes where a file's settings ask for them (`--fix` or `fix = true`); None when
    no file does, so LibCST is never imported for a plain lint run."""
    policy_for = _fix_policy(resolver)
    if not any(policy_for(t).fixable for t, r in zip(tasks, results) if any(f.fix for f in r.findings)):
        return None
    from torchlint.fix.files import fix_results

    report = fix_results(tasks, results, policy_for, write=write)
    for error in report.errors:
        click.echo(f"error: {error}", err=True)
    if show_fixes and write:
        click.echo(_fix_summary(report), nl=False, err=report.stdin_output is not None)
    return report


def _fix_summary(report) -> str:  # type: ignore[no-untyped-def]
    """ruff's `--show-fixes` listing: fixes applied per file and rule."""
    from torchlint.rules.registry import RULES_BY_CODE

    total = sum(report.applied.values())
    if not total:
        return "No fixes applied.\n"
    lines = [f"Fixed {total} finding{'s' if total != 1 else ''}:"]
    for fixed in report.files:
        lines.append(f"- {fixed.display}:")
        for code, count in sorted(fixed.applied.items()):
            lines.append(f"    {count} × {code} ({RULES_BY_CODE[code].name})")
    return "\n".join(lines) + "\n"


def _finish_fix_only(tasks: list[FileTask], results: list[FileResult], report, *, diff: bool) -> None:  # type: ignore[no-untyped-def]
    """`--diff` / `--fix-only` output; `report` is None when no file had anything to fix."""
    internal = sum(1 for r in results if r.internal_error)
    for r in results:
        if r.internal_error:
            click.echo(f"error: {r.internal_error}", err=True)
    if report is None:
        for task in tasks:
            if task.path == "-" and task.data is not None and not diff:
                with raw_streams():  # the user's source, unchanged
                    click.echo(task.data.decode("utf-8", errors="replace"), nl=False)
        click.echo("No fixes to apply." if not diff else "Would fix 0 findings.", err=True)
        if internal:
            raise click.exceptions.Exit(EXIT_ERROR)
        return
    total = sum(report.applied.values())
    if diff:
        from torchlint.fix.files import unified_diff

        for fixed in report.files:
            click.echo(unified_diff(fixed), nl=False)
        click.echo(f"Would fix {total} finding{'s' if total != 1 else ''}.", err=True)
    elif report.stdin_output is not None:
        with raw_streams():  # the user's source, fixed
            click.echo(report.stdin_output, nl=False)
    else:
        click.echo(f"Fixed {total} finding{'s' if total != 1 else ''}.", err=True)
    if internal or report.errors:
        raise click.exceptions.Exit(EXIT_ERROR)
    if diff and report.files:
        raise click.exceptions.Exit(EXIT_FINDINGS)


def _fix_hint(findings: list[Finding], resolver: ConfigResolver, report) -> str:  # type: ignore[no-untyped-def]
    """ruff's closing line: how many findings `--fix` (or `--unsafe-fixes`) would fix."""
    lines = []
    if report is not None and sum(report.applied.values()):
        total = sum(report.applied.values())
        lines.append(f"Fixed {total} finding{'s' if total != 1 else ''}.")
    fixable = [f for f in findings if f.fix]
    if fixable and report is None:
        safe = sum(1 for f in fixable if f.fix and f.fix.safe)
        unsafe = len(fixable) - safe
        hidden = f"{unsafe} hidden fix{'es' if unsafe != 1 else ''} can be enabled with"
        if safe:
            lines.append(f"[*] {safe} fixable with the `--fix` option"
                         + (f" ({hidden} `--unsafe-fixes`)." if unsafe else "."))
        elif unsafe:
            lines.append(f"No fixes available ({hidden} `--fix --unsafe-fixes`).")
    return "".join(line + "\n" for line in lines)


def _add_noqa(tasks: list[FileTask], results: list[FileResult]) -> None:
    from torchlint.fix.files import add_noqa_to_files

    added, errors = add_noqa_to_files(tasks, results)
    for r in results:
        if r.internal_error:
            errors.append(r.internal_error)
    for error in errors:
        click.echo(f"error: {error}", err=True)
    click.echo(f"Added {added} noqa directive{'s' if added != 1 else ''}.", err=True)
    if errors:
        raise click.exceptions.Exit(EXIT_ERROR)


def _require_torch() -> None:
    from torchlint.verify.runner import VerifyUnavailable, torch_version

    try:
        torch_version()
    except VerifyUnavailable as exc:
        raise _fail(str(exc)) from None


def _build_tasks(paths: list[str], resolver: ConfigResolver, cwd: Path, stdin_filename: Optional[str],
                 force_exclude: bool) -> tuple[list[FileTask], list[str]]:
    """The files to lint (or stdin, for `-`) and the paths that do not exist."""
    if paths == ["-"]:
        name = stdin_filename or "-"
        settings = resolver.for_file(Path(name)) if stdin_filename else resolver.default
        if force_exclude and stdin_filename and settings.is_excluded(Path(name)):
            return [], []
        return [FileTask(path="-", display=name, codes=settings.codes_for(Path(name)),
                         options=_options(settings.options), data=_read_stdin(settings.max_file_size),
                         lint_timeout=settings.lint_timeout)], []
    if "-" in paths:
        raise _fail("`-` (stdin) cannot be combined with other paths")
    discovery = Discovery(resolver, force_exclude=force_exclude, project_root=project_root(cwd))
    tasks = [FileTask(path=str(path), display=display_path(path, cwd), codes=settings.codes_for(path),
                      options=_options(settings.options), max_bytes=settings.max_file_size,
                      lint_timeout=settings.lint_timeout)
             for path, settings in discovery.iter_files(paths)]
    for path, why in discovery.skipped:
        click.echo(f"warning: {display_path(path, cwd)}: skipped: {why}", err=True)
    return tasks, discovery.missing


def _read_stdin(max_bytes: int) -> bytes:
    data = sys.stdin.buffer.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise _fail(f"standard input is larger than max-file-size ({format_size(max_bytes)}); "
                    f"raise `--max-file-size` to check it")
    return data


def _collect(tasks: list[FileTask], results: list[FileResult]) -> tuple[list[Finding], list[Finding], int]:
    """Sorted findings, every parse failure (for SARIF notifications), and how many files hit
    an internal error. Problems that are not findings go to stderr."""
    findings: list[Finding] = []
    parse_errors: list[Finding] = []
    internal_errors = 0
    for task, result in zip(tasks, results):
        if result.internal_error:
            click.echo(f"error: {result.internal_error}", err=True)
            internal_errors += 1
        error = result.parse_error
        if error is not None:
            parse_errors.append(error)
            if error.code not in task.codes:
                click.echo(f"warning: {error.path}:{error.row}:{error.col}: {error.message}", err=True)
                if result.timed_out:  # valid code left unchecked: the run must not pass silently
                    internal_errors += 1
        findings.extend(result.findings)
    findings.sort(key=Finding.sort_key)
    return findings, parse_errors, internal_errors


def _options(options: dict[str, dict[str, Any]]) -> tuple:
    return tuple(sorted((code, tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in values.items())))
                        for code, values in options.items()))


def _cache_root(cache_dir: Optional[Path], resolver: ConfigResolver) -> Optional[Path]:
    """The cache directory to use, or None (with a warning) when it must not be used:
    tracked by git, or placed outside the project by a config file."""
    settings = resolver.default
    root = cache_dir or settings.cache_dir or (settings.root / CACHE_DIR_NAME)
    why = cache_refusal(root, settings.root, from_config=cache_dir is None)
    if why is not None:
        click.echo(f"warning: {printable(why)}", err=True)
        return None
    return root


def _run(tasks: list[FileTask], *, jobs: Optional[int], cache_root: Optional[Path], resolver: ConfigResolver,
         read_cache: bool = True) -> list[FileResult]:
    cache = Cache(cache_root, resolver.default.root, read=read_cache) if cache_root is not None else None
    return run_tasks(tasks, jobs=jobs, cache=cache)


class _Sources(dict):
    """Source files, loaded on first use, for code frames."""

    def __init__(self, tasks: list[FileTask]) -> None:
        super().__init__()
        self._tasks = {t.display: t for t in tasks}

    def get(self, key: str, default: Any = None) -> Any:
        if key not in self:
            task = self._tasks.get(key)
            self[key] = load_source(task) if task is not None else None
        return super().get(key, default)


def _render(fmt: str, findings: list[Finding], tasks: list[FileTask], parse_errors: list[Finding],
            cwd: Path, statistics: bool, quiet: bool, **context: Any) -> str:
    if statistics:
        counts = Counter((f.code, f.name) for f in findings)
        verdicts = Counter(f.verify["verdict"] for f in findings if f.verify)
        if fmt == "json":
            rows: list[dict[str, Any]] = [{"code": c, "name": n, "count": k} for (c, n), k in sorted(counts.items())]
            if verdicts:
                return json.dumps({"rules": rows, "verify": dict(sorted(verdicts.items()))}, indent=2) + "\n"
            return json.dumps(rows, indent=2) + "\n"  # codes and rule names only: nothing to neutralize
        lines = [f"{k:>5}\t{c}\t{n}" for (c, n), k in sorted(counts.items(), key=lambda i: (-i[1], i[0]))]
        if verdicts:
            lines.append("verify: " + ", ".join(f"{k} {v}" for k, v in sorted(verdicts.items())))
        return neutralize("\n".join(lines) + ("\n" if lines else ""))
    sources = _Sources(tasks)
    text = FORMATS[fmt](findings, sources, errors=parse_errors, cwd=cwd, quiet=quiet, **context)
    return text if fmt in COMMAND_FORMATS else neutralize(text, markup=fmt in MARKUP_FORMATS)


@main.command(short_help="Explain a rule (e.g. TL101), or list all rules with --all.")
@click.argument("code", required=False)
@click.option("--all", "show_all", is_flag=True, help="List every rule.")
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text", show_default=True)
def rule(code: Optional[str], show_all: bool, output_format: str) -> None:
    """Explain rule CODE (e.g. TL101), or list all rules with --all."""
    from torchlint.docs import rule_doc
    from torchlint.rules.registry import ALL_RULES, RULES_BY_CODE, RULES_BY_NAME

    if show_all:
        from torchlint.diagnostics import TOOL_CODES
        from torchlint.runtime.checks import RUNTIME_CHECKS

        static: tuple[Any, ...] = (*ALL_RULES, *TOOL_CODES)  # rules, and torchlint's own codes
        rows = [{"code": r.code, "name": r.name, "default": "on" if r.default_enabled else "off",
                 "severity": r.severity, "summary": r.summary} for r in static]
        # Runtime-only checks (reported by `torchlint run`) share the code space.
        rows = sorted(rows + [{"code": c.code, "name": c.name, "default": "run", "severity": c.severity,
                               "summary": c.summary} for c in RUNTIME_CHECKS], key=lambda row: row["code"])
        if output_format == "json":
            click.echo(json.dumps(rows, indent=2))
        else:
            for row in rows:
                click.echo(f"{row['code']}  {row['name']:<40} {row['default']:<4} {row['severity']:<8} {row['summary']}")
        return
    if not code:
        raise _fail("give a rule code (e.g. `torchlint rule TL101`) or --all")
    from torchlint.diagnostics import TOOL_CODES_BY_CODE, TOOL_CODES_BY_NAME
    from torchlint.runtime.checks import RUNTIME_CHECKS_BY_CODE, RUNTIME_CHECKS_BY_NAME

    found = (RULES_BY_CODE.get(code.upper()) or RULES_BY_NAME.get(code) or RUNTIME_CHECKS_BY_CODE.get(code.upper())
             or RUNTIME_CHECKS_BY_NAME.get(code) or TOOL_CODES_BY_CODE.get(code.upper()) or TOOL_CODES_BY_NAME.get(code))
    if found is None:
        raise _fail(f"unknown rule {code!r}; `torchlint rule --all` lists them")
    doc = rule_doc(found.code)
    if doc is None:
        raise _fail(f"no documentation found for {found.code} (broken installation?)")
    if output_format == "json":
        click.echo(json.dumps({"code": found.code, "name": found.name, "summary": found.summary,
                               "default": found.default_enabled, "severity": found.severity,
                               "explanation": doc}, indent=2))
    else:
        click.echo(doc, nl=not doc.endswith("\n"))


@main.command(short_help="Run the language server (LSP over stdio) for editors.")
def server() -> None:
    """Run torchlint's language server on stdin/stdout, for editors (needs torchlint[lsp])."""
    try:
        from torchlint.language_server import serve
    except ImportError as exc:
        raise _fail(f"the language server needs pygls ({exc}); install it with `pip install \"torchlint[lsp]\"`") from None
    with raw_streams():  # JSON-RPC, not a report
        serve()


@main.command(short_help="Run a training command under runtime monitors; confirm findings.",
              context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@click.option("--max-steps", type=click.IntRange(min=0), default=50, show_default=True,
              help="Stop the program after this many optimizer steps (0: no limit).")
@click.option("--full", is_flag=True, help="Run the whole program: no step budget (same as --max-steps 0).")
@click.option("--timeout", type=click.FloatRange(min=0), default=600.0, show_default=True,
              help="Stop the program after this many seconds (0: no limit).")
@click.option("--output-format", type=click.Choice(sorted(FORMATS)), default="full", show_default=True,
              help="Format of the report (on stderr, or in --output-file).")
@click.option("-o", "--output-file", type=click.Path(dir_okay=False, writable=True),
              help="Write the report to this file instead of stderr.")
@click.option("--select", help="Rule codes or prefixes to report (static rules and runtime checks).")
@click.option("--extend-select", help="Rule codes or prefixes to report in addition.")
@click.option("--ignore", help="Rule codes or prefixes not to report.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path), help="Use this config file.")
@click.option("--isolated", is_flag=True, help="Ignore all configuration files.")
@click.option("--no-cache", is_flag=True, help="Do not read or write the lint cache.")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Lint cache directory (default: as for `check`).")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when something is confirmed.")
@click.option("--confirmed-only", is_flag=True, help="Report only what the run confirmed (drop not-observed, "
              "not-reached and not-monitored static findings).")
@click.option("-q", "--quiet", is_flag=True, help="Print findings only, no summary.")
def run(command: tuple[str, ...], max_steps: int, full: bool, timeout: float, output_format: str,
        output_file: Optional[str], select: Optional[str], extend_select: Optional[str], ignore: Optional[str],
        config_path: Optional[Path], isolated: bool, no_cache: bool, cache_dir: Optional[Path], exit_zero: bool,
        confirmed_only: bool, quiet: bool) -> None:
    """Run COMMAND (e.g. `-- python train.py`) with runtime monitors, then report which findings
    it confirmed. This runs your code, as pytest does. The program's stdout and stderr are its
    own; the report goes to stderr or --output-file."""
    from torchlint.runtime.command import CheckSteps, RunOptions, run_command

    run_command(RunOptions(list(command), 0 if full else max_steps, timeout, output_format, output_file, select,
                           extend_select, ignore, config_path, isolated, exit_zero, quiet, confirmed_only,
                           no_cache=no_cache, cache_dir=cache_dir),
                CheckSteps(_build_tasks, _run, _collect, _render, _cache_root, write_output_file))


if __name__ == "__main__":  # pragma: no cover
    main()
