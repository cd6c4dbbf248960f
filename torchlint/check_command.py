"""The body of `torchlint check`, without click: what runs once the options are parsed, and a
hand-rolled parser for the common command line (`check PATHS` with the flags pre-commit and
editors pass) that answers it without importing click (about a third of a one-file run).

cli.py's click command calls `run_check` with the options click parsed; `fast_main` parses the
command lines it knows (`fast_options`) into the same options and runs the same function.
Anything else (another flag, a value click would reject, `--help`) returns None from
`fast_options`, and click parses it, errors included. tests/test_check_command.py keeps the
two parsers in agreement on a table of command lines.

Output goes through `echo`, which writes as `click.echo` does on these streams (text, then a
flush), and hands text holding an escape sequence to click.echo itself, which strips it
where click would. Failures raise `Exit`, which cli.py turns into click's."""

from __future__ import annotations

import os
import sys
from types import SimpleNamespace

from torchlint import api, gcpolicy, replay
from torchlint.config import CliOverrides, ConfigError, check_torch_version
from torchlint.options import OPTIONS
from torchlint.output import FORMATS, ROOT_RELATIVE_FORMATS
from torchlint.output.ci_safe import COMMAND_FORMATS, finish_streams, guarded_streams, raw_streams, write_commands
from torchlint.output.color import CHOICES as COLOR_CHOICES, Palette, use_color
from torchlint.output.report import render_report
from torchlint.progress import progress_for
from torchlint.project_root import project_root
from torchlint.safe_io import printable
from torchlint.selection import SelectionError, parse_list

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional
    from pathlib import Path
    from torchlint.diagnostics import Finding

EXIT_FINDINGS, EXIT_ERROR = 1, 2
# Formats other programs parse: a statistics table in their place would break the reader.
STATISTICS_FORMATS = ("full", "concise", "grouped", "json")
TEXT_FORMATS = ("full", "concise", "grouped")

# Every option of `check` as its function receives it, with click's defaults (a test compares).
DEFAULTS: dict[str, Any] = {
    "select": None, "extend_select": None, "ignore": None, "output_format": "full", "output_file": None,
    "statistics": False, "exit_zero": False, "config_path": None, "isolated": False, "exclude": None,
    "extend_exclude": None, "force_exclude": False, "respect_gitignore": None, "stdin_filename": None,
    "show_files": False, "show_settings": False, "quiet": False, "watch": False, "color": "auto",
    "project_root_option": None, "jobs": None, "no_cache": False, "cache_dir": None, "verify": False,
    "device": "auto", "max_file_size": None, "lint_timeout": None, "verify_timeout": None,
    "verify_memory": None, "verify_budget": None, "verified_only": False, "verify_unsandboxed": False,
    "show_sandbox": False, "fix": None, "unsafe_fixes": None, "diff": False, "fix_only": False,
    "show_fixes": False, "add_noqa": False, "torch_version": None,
}
# The flags `fast_options` parses: flag -> option; valued flag -> (option, allowed values or None).
_FAST_FLAGS = {"-q": "quiet", "--quiet": "quiet", "--exit-zero": "exit_zero", "--statistics": "statistics",
               "--no-cache": "no_cache", "--isolated": "isolated", "--force-exclude": "force_exclude"}
_FAST_VALUED: dict[str, tuple[str, Optional[tuple[str, ...]]]] = {
    "--output-format": ("output_format", tuple(FORMATS)), "--color": ("color", COLOR_CHOICES),
    "--select": ("select", None), "--extend-select": ("extend_select", None), "--ignore": ("ignore", None)}


class Exit(Exception):
    """Stop `check` with this exit code (cli.py raises click's Exit for it)."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def echo(text: str, nl: bool = True, err: bool = False, color: Optional[bool] = None) -> None:
    """click.echo(text, nl=nl, err=err, color=color) on torchlint's own streams."""
    if "\x1b" in text:  # click decides whether to strip it: ask click
        import click

        click.echo(text, nl=nl, err=err, color=color)
        return
    stream = sys.stderr if err else sys.stdout
    if stream is None:
        return
    if nl:
        text += "\n"
    if text:
        stream.write(text)
    stream.flush()


def fail(message: str) -> Exit:
    echo(f"error: {message}", err=True)
    return Exit(EXIT_ERROR)


def fast_options(argv: list[str]) -> Optional[tuple[tuple[str, ...], SimpleNamespace]]:
    """(paths, options) for a `check` command line this module parses exactly as click would;
    None for any other (click parses it)."""
    if not argv or argv[0] != "check" or any(k.startswith("_") and k.endswith("_COMPLETE") for k in os.environ):
        return None  # shell completion is click's
    options, paths, seen = dict(DEFAULTS), [], set()
    i = 1
    while i < len(argv):
        arg = argv[i]
        name, eq, value = arg.partition("=")
        if arg in _FAST_FLAGS and _FAST_FLAGS[arg] not in seen:
            seen.add(_FAST_FLAGS[arg])
            options[_FAST_FLAGS[arg]] = True
        elif name in _FAST_VALUED and _FAST_VALUED[name][0] not in seen:
            if not eq:
                i += 1
                if i == len(argv):
                    return None
                value = argv[i]
            key, allowed = _FAST_VALUED[name]
            if value.startswith("-") or (allowed is not None and value not in allowed):
                return None
            seen.add(key)
            options[key] = value
        elif arg.startswith("-") or not arg or not _readable(arg):
            return None  # another option, a repeat, `-`, `--`, or a path click refuses
        else:
            paths.append(arg)
        i += 1
    return tuple(paths), SimpleNamespace(**options)


def _readable(path: str) -> bool:
    """click.Path's check (readable=True): a path that exists must be readable."""
    try:
        os.stat(path)
    except OSError:
        return True
    except ValueError:  # a NUL in the name: click's own error
        return False
    return os.access(path, os.R_OK)


def fast_main(argv: list[str], process_ends: bool = False) -> None:
    """Run `argv` and exit when `fast_options` parses it; return otherwise. As cli._Group.main
    around click's standalone main: the streams filtered, a failed write exit 2.
    `process_ends`: the console script's process, which exits with this command (unless it
    watches), so nothing alive needs the collector again."""
    parsed = fast_options(argv)
    if parsed is None:
        return
    if process_ends and not parsed[1].watch:
        gcpolicy.one_shot()
    with guarded_streams():
        try:
            code = _standalone(*parsed)
        except OSError as exc:
            code = output_failed(exc)
        try:
            finish_streams()
            if sys.stdout is not None:
                sys.stdout.flush()
        except (OSError, ValueError) as exc:
            code = output_failed(exc)
    sys.exit(code)


def _standalone(paths: tuple[str, ...], o: SimpleNamespace) -> Any:
    """click's standalone mode: the exit code of an `Exit`, "Aborted!" on ^C, exit 1 on a broken pipe."""
    try:
        run_check(paths, o)
        return 0
    except Exit as exc:
        return exc.code
    except SystemExit as exc:
        return exc.code
    except (EOFError, KeyboardInterrupt):
        echo("", err=True)
        echo("Aborted!", err=True)
        return 1
    except OSError as exc:
        import errno

        if exc.errno != errno.EPIPE:
            raise
        from click.utils import _PacifyFlushWrapper  # what click's main wraps them in

        sys.stdout = _PacifyFlushWrapper(sys.stdout)  # type: ignore[assignment]
        sys.stderr = _PacifyFlushWrapper(sys.stderr)  # type: ignore[assignment]
        return 1


def output_failed(exc: BaseException) -> int:
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


def run_check(paths: tuple[str, ...], o: SimpleNamespace) -> None:
    """`torchlint check PATHS` with the parsed options `o` (DEFAULTS' names)."""
    precheck(o)
    request = build_request(paths, o)
    if o.show_settings:
        from torchlint.cli_tools import show_settings  # click's module: only for --show-settings

        try:
            echo(show_settings(api.resolver_for(request), (paths or (".",))[0]))
        except ConfigError as exc:
            raise fail(str(exc)) from None
        return
    if o.watch:  # ruff's --watch; it refuses stdin, --show-files and --add-noqa itself
        from torchlint.watch import watch  # logging and the watcher only for --watch

        watch(paths, lambda: _click_exit(check_once, o, request),
              refuse=o.show_files or o.add_noqa or bool(o.stdin_filename))
    check_once(o, request)


def _click_exit(run: Any, *args: Any) -> None:
    """`run(*args)`, its Exit raised as click's (what --watch catches between runs)."""
    try:
        run(*args)
    except Exit as exc:
        import click

        raise click.exceptions.Exit(exc.code) from None


def check_once(o: SimpleNamespace, request: api.CheckRequest) -> None:
    if not o.output_file and not o.show_files and sys.stdout is None:
        raise fail("standard output is closed; write the report to a file with -o FILE")
    request.progress = progress = progress_for(o.quiet or o.show_files)
    try:
        report = api.check(request)
    except api.CheckError as exc:
        raise fail(str(exc)) from None
    finally:
        progress.close()
    if o.show_files:
        for task in sorted(report.tasks, key=lambda t: t.display):
            echo(task.display)
        report_missing(report.missing)
    elif o.add_noqa:
        _finish_add_noqa(report)
    elif o.diff or o.fix_only:
        _finish_fix_only(report, diff=o.diff)
    else:
        _finish_report(o, report)


def precheck(o: SimpleNamespace) -> None:
    """Option combinations that cannot work, checked before anything is read."""
    if o.verified_only and not o.verify:
        raise fail("--verified-only needs --verify")
    if o.verify_unsandboxed and not o.verify:
        raise fail("--verify-unsandboxed needs --verify")
    if o.show_sandbox:
        _require_torch()
        from torchlint.verify.runner import describe_sandbox

        ok, text = describe_sandbox(unsandboxed=o.verify_unsandboxed)
        echo(text)
        raise Exit(0 if ok else 1)
    if o.statistics and o.output_format not in STATISTICS_FORMATS:
        raise fail(f"--statistics cannot be combined with --output-format {o.output_format}; "
                   f"use one of {', '.join(STATISTICS_FORMATS)}")
    if o.add_noqa and (o.fix or o.diff or o.fix_only):
        raise fail("--add-noqa cannot be combined with --fix, --diff or --fix-only")
    if o.torch_version is not None:
        try:
            check_torch_version(o.torch_version, "--torch-version")
        except ConfigError as exc:
            raise fail(str(exc)) from None
    if o.verify:
        _require_torch()  # fail before linting, not after


def _selectors(value: Optional[str], option: str) -> Optional[list[str]]:
    if value is None:
        return None
    if option == "--select" and not value.strip(" ,"):
        raise fail("--select: empty selection would disable every rule; give codes or prefixes "
                   "(e.g. `--select TL1,TL501` or `--select ALL`)")
    try:
        return parse_list([value])
    except SelectionError as exc:
        raise fail(f"{option}: {exc}") from None


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


def build_request(paths: tuple[str, ...], o: SimpleNamespace) -> api.CheckRequest:
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
    echo(line, err=True)


def _show_fixes(report) -> None:  # type: ignore[no-untyped-def]
    from torchlint.cli_tools import fix_summary

    echo(fix_summary(report), nl=False, err=report.stdin_output is not None)


def _finish_report(o: SimpleNamespace, report: api.CheckReport) -> None:
    """The findings in the chosen format, ruff's fix hint, and the exit code."""
    findings, fix_report = report.findings, report.fix_report
    cwd: Any = report.cwd  # a string: the text formats need no pathlib (~4 ms of a one-file run)
    if o.output_format not in TEXT_FORMATS or o.output_file:
        from pathlib import Path  # the other formats and -o name files in pathlib's terms

        cwd = Path(cwd)
    over_limit = None
    if o.output_format == "sarif":
        from torchlint.output.sarif import truncation_warning

        over_limit = truncation_warning(len(findings))
    if over_limit:
        echo(f"warning: {over_limit}", err=True)
    palette = Palette(o.output_format in TEXT_FORMATS
                      and use_color(o.color, None if o.output_file else sys.stdout))
    root = project_root(cwd, o.project_root_option) if o.output_format in ROOT_RELATIVE_FORMATS else cwd
    # With a path missing, the run did not check everything: no "All checks passed!".
    text = render_report(o.output_format, findings, report.sources, report.parse_errors, cwd, o.statistics,
                         o.quiet or bool(report.missing and not findings), root=root, rules=report.enabled,
                         palette=palette)
    if fix_report is not None and fix_report.stdin_output is not None:
        with raw_streams():  # the user's own source, byte for byte
            echo(fix_report.stdin_output, nl=False)  # like ruff: the fixed source on stdout,
        echo(text, nl=False, err=True)  # the findings left on stderr
        text = ""
    elif o.output_format in TEXT_FORMATS and not o.quiet and not o.statistics:
        text += _fix_hint(findings, fix_report)
    if o.output_file:
        write_output_file(o.output_file, text, [cwd, project_root(cwd, o.project_root_option)])
    elif o.output_format in COMMAND_FORMATS:
        write_commands(text)
    elif text:
        echo(text, nl=False, color=palette.enabled or None)
    report_missing(report.missing)
    if report.internal_errors or (fix_report is not None and fix_report.errors):
        raise Exit(EXIT_ERROR)
    code = EXIT_FINDINGS if findings and not o.exit_zero else 0
    if fix_report is None and not over_limit and not o.output_file:
        replay.record_report(report, text, code, palette.enabled)
    if code:
        raise Exit(code)


def write_output_file(path: str, text: str, roots: list[Path]) -> None:
    """The report to `-o PATH`, never through a symlink the checked tree planted (exit 2)."""
    try:
        api.write_output_file(path, text, roots)
    except api.CheckError as exc:
        raise fail(str(exc)) from None


def report_missing(missing: list[str]) -> None:
    for path in missing:
        echo(f"error: {printable(path)}: no such file or directory", err=True)
    if missing:
        raise Exit(EXIT_ERROR)


def _finish_fix_only(check: api.CheckReport, *, diff: bool) -> None:
    """`--diff` / `--fix-only` output; no fix report when no file had anything to fix."""
    report = check.fix_report
    internal = sum(1 for r in check.results if r.internal_error)
    for r in check.results:
        if r.internal_error:
            echo(f"error: {r.internal_error}", err=True)
    if report is None:
        for task in check.tasks:
            if task.path == "-" and task.data is not None and not diff:
                with raw_streams():  # the user's source, unchanged
                    echo(task.data.decode("utf-8", errors="replace"), nl=False)
        echo("No fixes to apply." if not diff else "Would fix 0 findings.", err=True)
        if internal:
            raise Exit(EXIT_ERROR)
        return
    total = sum(report.applied.values())
    if diff:
        from torchlint.fix.files import unified_diff

        for fixed in report.files:
            echo(unified_diff(fixed), nl=False)
        echo(f"Would fix {total} finding{'s' if total != 1 else ''}.", err=True)
    elif report.stdin_output is not None:
        with raw_streams():  # the user's source, fixed
            echo(report.stdin_output, nl=False)
    else:
        echo(f"Fixed {total} finding{'s' if total != 1 else ''}.", err=True)
    if internal or report.errors:
        raise Exit(EXIT_ERROR)
    if diff and report.files:
        raise Exit(EXIT_FINDINGS)


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
        echo(f"error: {error}", err=True)
    added = report.noqa_added
    echo(f"Added {added} noqa directive{'s' if added != 1 else ''}.", err=True)
    if report.noqa_errors:
        raise Exit(EXIT_ERROR)


def _require_torch() -> None:
    from torchlint.verify.runner import VerifyUnavailable, torch_version

    try:
        torch_version()
    except VerifyUnavailable as exc:
        raise fail(str(exc)) from None
