"""The `torchlint` command line, following ruff's conventions."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable, Optional

import click

from torchlint import __version__, api, replay
from torchlint.cli_tools import clean, fix_summary, show_settings
from torchlint.config import CliOverrides, ConfigError, check_torch_version
from torchlint.diagnostics import Finding
from torchlint.options import OPTIONS, OPTIONS_BY_KEY
from torchlint.output import FORMATS, ROOT_RELATIVE_FORMATS
from torchlint.output.ci_safe import COMMAND_FORMATS, finish_streams, guarded_streams, raw_streams, write_commands
from torchlint.output.color import CHOICES as COLOR_CHOICES, Palette, use_color
from torchlint.output.report import render_report
from torchlint.progress import progress_for
from torchlint.project_root import project_root
from torchlint.safe_io import printable
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


def settings_flag(key: str) -> Callable[[Any], Any]:
    """`--KEY` on `check`, as its row of the option table declares it (torchlint/options.py)."""
    option = OPTIONS_BY_KEY[key]
    if option.kind == "bool":
        return click.option(f"--{key}/--no-{key}", option.attr, default=None, help=option.flag_help)
    kwargs: dict[str, Any] = {}
    if option.kind == "int":
        kwargs["type"] = click.IntRange(min=int(option.minimum or 0))
    elif option.kind == "seconds":
        kwargs.update(type=float, callback=_seconds_from(option.minimum or 0))
    return click.option(f"--{key}", default=None, help=option.flag_help, **kwargs)


def _seconds_from(minimum: float) -> Callable[[click.Context, click.Parameter, Optional[float]], Optional[float]]:
    def check(ctx: click.Context, param: click.Parameter, value: Optional[float]) -> Optional[float]:
        if value is not None and not (minimum <= value <= 86_400):  # also false for nan
            raise click.BadParameter(f"give a number of seconds between {minimum:g} and 86400")
        return value
    return check


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="torchlint", message="%(prog)s %(version)s")
def main() -> None:
    """torchlint: a linter for PyTorch code."""


@main.command(short_help="Check files or directories for PyTorch pitfalls.")
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@settings_flag("select")
@settings_flag("extend-select")
@settings_flag("ignore")
@click.option("--output-format", type=click.Choice(sorted(FORMATS)), default="full", show_default=True)
@click.option("-o", "--output-file", type=click.Path(dir_okay=False, writable=True), help="Write the report to this file.")
@click.option("--statistics", is_flag=True, help="Show counts for every rule with findings (with --output-format full, concise or json).")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings (errors still exit 2).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path), help="Use this config file for every file.")
@click.option("--isolated", is_flag=True, help="Ignore all configuration files.")
@settings_flag("exclude")
@settings_flag("extend-exclude")
@click.option("--force-exclude", is_flag=True, help="Apply excludes to paths passed explicitly too (for pre-commit).")
@settings_flag("respect-gitignore")
@click.option("--stdin-filename", help="The name of the file when passing source on stdin with `-`.")
@click.option("--show-files", is_flag=True, help="List the files that would be checked, then exit.")
@click.option("--show-settings", is_flag=True, help="Print the settings resolved for the first path, then exit.")
@click.option("-q", "--quiet", is_flag=True, help="Print findings only, no summary.")
@click.option("-w", "--watch", is_flag=True, help="Lint again whenever a file changes (needs torchlint[watch]).")
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
@settings_flag("max-file-size")
@settings_flag("lint-timeout")
@settings_flag("verify-timeout")
@settings_flag("verify-memory")
@settings_flag("verify-budget")
@click.option("--verified-only", is_flag=True, help="With --verify: keep only findings confirmed by a run of your own code (not by a generic probe).")
@click.option("--verify-unsandboxed", is_flag=True,
              help="With --verify: run the checked code even where the OS sandbox cannot be set up. Only for code "
                   "you trust; no config file can set this.")
@click.option("--show-sandbox", is_flag=True, help="Print the --verify sandbox layers this machine provides, then exit.")
@settings_flag("fix")
@settings_flag("unsafe-fixes")
@click.option("--diff", is_flag=True, help="Print the fixes as a unified diff instead of writing them; exit 1 if there are any.")
@click.option("--fix-only", is_flag=True, help="Apply fixes and report nothing else (exit 0 unless an error occurs).")
@click.option("--show-fixes", is_flag=True, help="List the fixes applied, per file and rule.")
@click.option("--add-noqa", is_flag=True, help="Append `# noqa: TLxxx` to the line of every finding.")
@settings_flag("torch-version")
def check(paths: tuple[str, ...], **options: Any) -> None:
    """Check PATHS (files or directories; default: .) for PyTorch pitfalls."""
    o = SimpleNamespace(**options)
    _precheck(o)
    request = _request(paths, o)
    if o.show_settings:
        try:
            click.echo(show_settings(api.resolver_for(request), (paths or (".",))[0]))
        except ConfigError as exc:
            raise _fail(str(exc)) from None
        return
    if o.watch:  # ruff's --watch; it refuses stdin, --show-files and --add-noqa itself
        from torchlint.watch import watch  # logging and the watcher only for --watch

        watch(paths, lambda: _check_once(o, request), refuse=o.show_files or o.add_noqa or bool(o.stdin_filename))
    _check_once(o, request)


def _check_once(o: SimpleNamespace, request: api.CheckRequest) -> None:
    if not o.output_file and not o.show_files and sys.stdout is None:
        raise _fail("standard output is closed; write the report to a file with -o FILE")
    request.progress = progress = progress_for(o.quiet or o.show_files)
    try:
        report = api.check(request)
    except api.CheckError as exc:
        raise _fail(str(exc)) from None
    finally:
        progress.close()
    if o.show_files:
        for task in sorted(report.tasks, key=lambda t: t.display):
            click.echo(task.display)
        _report_missing(report.missing)
    elif o.add_noqa:
        _finish_add_noqa(report)
    elif o.diff or o.fix_only:
        _finish_fix_only(report, diff=o.diff)
    else:
        _finish_report(o, report)


def _precheck(o: SimpleNamespace) -> None:
    """Option combinations that cannot work, checked before anything is read."""
    if o.verified_only and not o.verify:
        raise _fail("--verified-only needs --verify")
    if o.verify_unsandboxed and not o.verify:
        raise _fail("--verify-unsandboxed needs --verify")
    if o.show_sandbox:
        _require_torch()
        from torchlint.verify.runner import describe_sandbox

        ok, text = describe_sandbox(unsandboxed=o.verify_unsandboxed)
        click.echo(text)
        raise click.exceptions.Exit(0 if ok else 1)
    if o.statistics and o.output_format not in STATISTICS_FORMATS:
        raise _fail(f"--statistics cannot be combined with --output-format {o.output_format}; "
                    f"use one of {', '.join(STATISTICS_FORMATS)}")
    if o.add_noqa and (o.fix or o.diff or o.fix_only):
        raise _fail("--add-noqa cannot be combined with --fix, --diff or --fix-only")
    if o.torch_version is not None:
        try:
            check_torch_version(o.torch_version, "--torch-version")
        except ConfigError as exc:
            raise _fail(str(exc)) from None
    if o.verify:
        _require_torch()  # fail before linting, not after


def overrides_from_flags(flags: SimpleNamespace) -> CliOverrides:
    """The settings the command line gives, one per flagged row of the option table."""
    values = {}
    for option in (o for o in OPTIONS if o.flag):
        raw = getattr(flags, option.attr, None)
        if raw is not None and option.kind == "list":
            raw = [p for p in raw.split(",") if p] if option.key.endswith("exclude") else \
                _selectors(raw, f"--{option.key}")
        values[option.attr] = raw
    return CliOverrides(**values)


def _request(paths: tuple[str, ...], o: SimpleNamespace) -> api.CheckRequest:
    o.fix = True if (o.fix_only or o.diff) else o.fix
    action = api.SHOW_FILES if o.show_files else api.ADD_NOQA if o.add_noqa else \
        api.FIX_ONLY if (o.diff or o.fix_only) else api.LINT
    return api.CheckRequest(
        list(paths) or None, overrides_from_flags(o), config_path=o.config_path, isolated=o.isolated,
        stdin_filename=o.stdin_filename, force_exclude=o.force_exclude, jobs=o.jobs, no_cache=o.no_cache,
        cache_dir=o.cache_dir, action=action, write_fixes=not o.diff,
        show_fixes=_show_fixes if o.show_fixes else None,
        verify=api.VerifyRequest(o.device, o.verify_unsandboxed, o.verified_only) if o.verify else None,
        notify=_notify)


def _notify(line: str) -> None:
    replay.spoil()
    click.echo(line, err=True)


def _show_fixes(report) -> None:  # type: ignore[no-untyped-def]
    click.echo(fix_summary(report), nl=False, err=report.stdin_output is not None)


def _finish_report(o: SimpleNamespace, report: api.CheckReport) -> None:
    """The findings in the chosen format, ruff's fix hint, and the exit code."""
    findings, cwd, fix_report = report.findings, report.cwd, report.fix_report
    over_limit = None
    if o.output_format == "sarif":
        from torchlint.output.sarif import truncation_warning

        over_limit = truncation_warning(len(findings))
    if over_limit:
        click.echo(f"warning: {over_limit}", err=True)
    palette = Palette(o.output_format in TEXT_FORMATS
                      and use_color(o.color, None if o.output_file else sys.stdout))
    root = project_root(cwd, o.project_root_option) if o.output_format in ROOT_RELATIVE_FORMATS else cwd
    # With a path missing, the run did not check everything: no "All checks passed!".
    text = render_report(o.output_format, findings, report.sources, report.parse_errors, cwd, o.statistics,
                         o.quiet or bool(report.missing and not findings), root=root, rules=report.enabled,
                         palette=palette)
    if fix_report is not None and fix_report.stdin_output is not None:
        with raw_streams():  # the user's own source, byte for byte
            click.echo(fix_report.stdin_output, nl=False)  # like ruff: the fixed source on stdout,
        click.echo(text, nl=False, err=True)  # the findings left on stderr
        text = ""
    elif o.output_format in TEXT_FORMATS and not o.quiet and not o.statistics:
        text += _fix_hint(findings, fix_report)
    if o.output_file:
        write_output_file(o.output_file, text, [cwd, project_root(cwd, o.project_root_option)])
    elif o.output_format in COMMAND_FORMATS:
        write_commands(text)
    elif text:
        click.echo(text, nl=False, color=palette.enabled or None)
    _report_missing(report.missing)
    if report.internal_errors or (fix_report is not None and fix_report.errors):
        raise click.exceptions.Exit(EXIT_ERROR)
    code = EXIT_FINDINGS if findings and not o.exit_zero else 0
    if fix_report is None and not over_limit and not o.output_file:
        replay.record_report(report, text, code, palette.enabled)
    if code:
        raise click.exceptions.Exit(code)


def write_output_file(path: str, text: str, roots: list[Path]) -> None:
    """The report to `-o PATH`, never through a symlink the checked tree planted (exit 2)."""
    try:
        api.write_output_file(path, text, roots)
    except api.CheckError as exc:
        raise _fail(str(exc)) from None


def _report_missing(missing: list[str]) -> None:
    for path in missing:
        click.echo(f"error: {printable(path)}: no such file or directory", err=True)
    if missing:
        raise click.exceptions.Exit(EXIT_ERROR)


def _finish_fix_only(check: api.CheckReport, *, diff: bool) -> None:
    """`--diff` / `--fix-only` output; no fix report when no file had anything to fix."""
    report = check.fix_report
    internal = sum(1 for r in check.results if r.internal_error)
    for r in check.results:
        if r.internal_error:
            click.echo(f"error: {r.internal_error}", err=True)
    if report is None:
        for task in check.tasks:
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


def _fix_hint(findings: list[Finding], report) -> str:  # type: ignore[no-untyped-def]
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


def _finish_add_noqa(report: api.CheckReport) -> None:
    for error in report.noqa_errors:
        click.echo(f"error: {error}", err=True)
    added = report.noqa_added
    click.echo(f"Added {added} noqa directive{'s' if added != 1 else ''}.", err=True)
    if report.noqa_errors:
        raise click.exceptions.Exit(EXIT_ERROR)


def _require_torch() -> None:
    from torchlint.verify.runner import VerifyUnavailable, torch_version

    try:
        torch_version()
    except VerifyUnavailable as exc:
        raise _fail(str(exc)) from None


@main.command(short_help="Explain a rule (e.g. TL101), or list all rules with --all.")
@click.argument("code", required=False)
@click.option("--all", "show_all", is_flag=True, help="List every rule.")
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text", show_default=True)
def rule(code: Optional[str], show_all: bool, output_format: str) -> None:
    """Explain rule CODE (e.g. TL101), or list all rules with --all."""
    from torchlint.docs import rule_doc
    from torchlint import catalog

    if show_all:
        from torchlint.diagnostics import TOOL_CODES

        # Runtime-only checks (reported by `torchlint run`) share the code space: "run".
        rows = [{"code": r.code, "name": r.name,
                 "default": ("on" if r.default_enabled else "off") if catalog.is_static(r) else "run",
                 "severity": r.severity, "summary": r.summary} for r in catalog.entries()]
        rows = sorted(rows + [{"code": t.code, "name": t.name, "default": "on" if t.default_enabled else "off",
                               "severity": t.severity, "summary": t.summary} for t in TOOL_CODES],
                      key=lambda row: row["code"])
        if output_format == "json":
            click.echo(json.dumps(rows, indent=2))
        else:
            for row in rows:
                click.echo(f"{row['code']}  {row['name']:<40} {row['default']:<4} {row['severity']:<8} {row['summary']}")
        return
    if not code:
        raise _fail("give a rule code (e.g. `torchlint rule TL101`) or --all")
    from torchlint.diagnostics import TOOL_CODES_BY_CODE, TOOL_CODES_BY_NAME

    found = catalog.lookup(code) or TOOL_CODES_BY_CODE.get(code.upper()) or TOOL_CODES_BY_NAME.get(code)
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
@click.option("--report", "html_report", type=click.Path(dir_okay=False, writable=True),
              help="Also write a self-contained HTML page: the findings, per-step loss, gradient norms, learning "
              "rates, worker random streams, the first non-finite value.")
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
        output_file: Optional[str], html_report: Optional[str], select: Optional[str], extend_select: Optional[str],
        ignore: Optional[str], config_path: Optional[Path], isolated: bool, no_cache: bool, cache_dir: Optional[Path],
        exit_zero: bool, confirmed_only: bool, quiet: bool) -> None:
    """Run COMMAND (e.g. `-- python train.py`) with runtime monitors, then report which findings
    it confirmed. This runs your code, as pytest does. The program's stdout and stderr are its
    own; the report goes to stderr or --output-file."""
    from torchlint.runtime.command import RunOptions, run_command

    run_command(RunOptions(list(command), 0 if full else max_steps, timeout, output_format, output_file, select,
                           extend_select, ignore, config_path, isolated, exit_zero, quiet, confirmed_only,
                           no_cache=no_cache, cache_dir=cache_dir, html_report=html_report),
                write_output_file)


main.add_command(clean)


if __name__ == "__main__":  # pragma: no cover
    main()
