"""The `torchlint` command line, following ruff's conventions."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import click

from torchlint import __version__, api, check_command
from torchlint.check_command import EXIT_ERROR
from torchlint.cli_tools import clean
from torchlint.options import OPTIONS_BY_KEY
from torchlint.output import FORMATS
from torchlint.output.ci_safe import finish_streams, guarded_streams, raw_streams
from torchlint.output.color import CHOICES as COLOR_CHOICES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Optional


def _fail(message: str) -> "click.exceptions.Exit":
    click.echo(f"error: {message}", err=True)
    return click.exceptions.Exit(EXIT_ERROR)


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
                code = check_command.output_failed(exc)
            try:
                finish_streams()
                if sys.stdout is not None:
                    sys.stdout.flush()
            except (OSError, ValueError) as exc:
                code = check_command.output_failed(exc)
        sys.exit(code)


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
    try:
        check_command.run_check(paths, SimpleNamespace(**options))
    except check_command.Exit as exc:
        raise click.exceptions.Exit(exc.code) from None


def write_output_file(path: str, text: str, roots: list[Path]) -> None:
    """The report to `-o PATH`, never through a symlink the checked tree planted (exit 2)."""
    try:
        api.write_output_file(path, text, roots)
    except api.CheckError as exc:
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
