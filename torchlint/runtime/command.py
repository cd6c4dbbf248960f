"""`torchlint run -- COMMAND`: run the user's program under the monitors, lint the files it
executed, and report each static finding's runtime verdict plus the runtime-only checks."""

from __future__ import annotations

import shlex
import signal
import tempfile
from dataclasses import dataclass
from pathlib import Path

import click

from torchlint.api import CheckError, CheckRequest, Sources, check, resolver_for, write_output_file
from torchlint.config import CliOverrides, ConfigError
from torchlint.diagnostics import Finding
from torchlint.linter import FileTask
from torchlint.output.ci_safe import COMMAND_FORMATS, write_commands
from torchlint.output.report import render_report
from torchlint.project_root import project_root
from torchlint.runtime.analysis import Observation, judge_static, load_events, problem_findings, runtime_problems
from torchlint import catalog
from torchlint.runtime.html_report import compile_notes, render_html
from torchlint.runtime.launcher import Outcome, program_env, run_program
from torchlint.selection import STATIC, SelectionError, SelectionLayer

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable, Optional

# Exit codes of our own. Otherwise `run` exits with the program's code (a signal N: 128 + N).
EXIT_CONFIRMED = 1
EXIT_ERROR = 2  # torchlint failed: bad options, the command cannot start, a lint internal error
EXIT_BUDGET = 123  # --max-steps stopped a program that exited 0: only part of it was judged
EXIT_TIMEOUT = 124  # as GNU timeout(1)
EXIT_INTERRUPTED = 130


@dataclass
class RunOptions:
    command: list[str]
    max_steps: int
    timeout: float
    output_format: str
    output_file: Optional[str]
    select: Optional[str]
    extend_select: Optional[str]
    ignore: Optional[str]
    config_path: Optional[Path]
    isolated: bool
    exit_zero: bool
    quiet: bool
    confirmed_only: bool = False
    no_cache: bool = False
    cache_dir: Optional[Path] = None
    html_report: Optional[str] = None  # --report: the HTML page


# `--select TL1` covers static rules and runtime checks alike: one selector over the catalog.
SELECTOR = STATIC.extended(sorted(catalog.runtime_codes()))
RUNTIME_SELECTOR = SELECTOR.only(catalog.runtime_codes())


def _selectors(value: Optional[str], option: str) -> Optional[list[str]]:
    if value is None:
        return None
    try:
        return SELECTOR.parse([value])
    except SelectionError as exc:
        raise _fail(f"{option}: {exc}") from None


def _fail(message: str) -> click.exceptions.Exit:
    click.echo(f"error: {message}", err=True)
    return click.exceptions.Exit(2)


def run_command(opts: RunOptions, write_output: Callable[[str, str, list[Path]], None]) -> None:
    # Static rules ignore the runtime-only prefixes (no static code starts with them).
    layer = SelectionLayer(_selectors(opts.select, "--select"), _selectors(opts.extend_select, "--extend-select")
                           or [], _selectors(opts.ignore, "--ignore") or [])
    overrides = CliOverrides(select=layer.select, extend_select=layer.extend_select, ignore=layer.ignore)
    cwd = Path.cwd().resolve()
    request = CheckRequest([], overrides, config_path=opts.config_path, isolated=opts.isolated,
                           no_cache=opts.no_cache, cache_dir=opts.cache_dir, apply_fixes=False,
                           warn_empty_directories=False, cwd=cwd,
                           notify=lambda line: click.echo(line, err=True))
    try:  # a bad config fails before the program runs
        request.resolver = resolver_for(request)
    except ConfigError as exc:
        raise _fail(str(exc)) from None

    with tempfile.TemporaryDirectory(prefix="torchlint-run-") as events_dir:
        outcome = run_program(opts.command, program_env(Path(events_dir), opts.max_steps), opts.timeout or None)
        if outcome.start_error:
            raise _fail(outcome.start_error)
        events = load_events(Path(events_dir))
        obs = Observation(events + _killed(outcome, events))

    # `check` on the Python files the program executed.
    request.paths = sorted(f for f in obs.files if f.endswith(".py") and Path(f).is_file())
    try:
        report = check(request)
    except CheckError as exc:
        raise _fail(str(exc)) from None
    static = report.findings
    stopped = _stopped_early(opts, outcome, obs)
    judge_static(static, obs, cwd, stopped)
    if stopped:
        for f in static:  # reached, but only on the part of the program that ran
            if f.runtime and f.runtime.verdict == "not-observed":
                f.runtime = f.runtime.noted(f" (cut short: {stopped.split(';')[0]}; the hazard may come later)")
    problems = runtime_problems(obs, static, cwd)  # a crash confirms (in place) the static finding it is
    enabled = RUNTIME_SELECTOR.resolve([layer])
    problems = [p for p in problems if p.code in enabled]
    findings = sorted(static + problem_findings(problems, cwd), key=Finding.sort_key)
    if opts.confirmed_only:
        findings = [f for f in findings if f.runtime and f.runtime.confirmed]
    tasks = list(report.tasks)
    framed = {t.display for t in tasks}
    for path in sorted({f.path for f in findings} - framed):  # runtime findings outside the linted files
        tasks.append(FileTask(path=str(cwd / path), display=path, codes=frozenset()))

    text = render_report(opts.output_format, findings, Sources(tasks), report.parse_errors, cwd, False, opts.quiet)
    _emit(opts, text, cwd, write_output)
    status = "\n".join([_status(opts, outcome, obs, cwd), *([_unfinished(static)] if stopped else [])])
    if not opts.quiet:
        click.echo("\n".join([status, *("note: " + n for n in compile_notes(obs, cwd))]), err=True)
    if opts.html_report:  # the page shows the compile notes itself
        try:  # written as -o writes: never through a symlink
            write_output_file(opts.html_report, render_html(findings, obs, cwd, shlex.join(opts.command), status),
                              [cwd, project_root(cwd)], option="--report")
        except CheckError as exc:
            raise _fail(str(exc)) from None
    for error in obs.internal_errors:
        click.echo(f"warning: torchlint run monitor: {error}", err=True)
    code = exit_code(outcome, obs.budget_reached, report.internal_errors > 0,
                     any(f.runtime and f.runtime.confirmed for f in findings) and not opts.exit_zero)
    if code:
        raise click.exceptions.Exit(code)


def _emit(opts: RunOptions, text: str, cwd: Path, write_output: Callable[[str, str, list[Path]], None]) -> None:
    """The program owns stdout (and its stderr is untouched): the report goes to stderr or a file."""
    if opts.output_file:
        write_output(opts.output_file, text, [cwd, project_root(cwd)])
    elif opts.output_format in COMMAND_FORMATS:
        write_commands(text, err=True)
    elif text:
        click.echo(text, nl=False, err=True)


def _killed(outcome: Outcome, events: list[dict]) -> list[dict]:
    """The `crash` event of a program a signal killed that no hook of its own saw (SIGKILL, as
    the kernel's OOM killer sends it; faulthandler's dump, when there is one, is the crash)."""
    code = outcome.returncode
    if code is None or code >= 0 or outcome.timed_out or outcome.interrupted or any(
            e.get("kind") == "crash" for e in events):
        return []
    steps = max((e.get("steps", 0) for e in events if e.get("kind") == "counts"), default=0)
    return [{"kind": "crash", "site": None, "pid": 0, "rank": 0, "world": 1, "step": steps, "frames": [],
             "exception": f"killed by {signal_name(-code)}", "message": "", "detail": []}]


def signal_name(number: int) -> str:
    try:
        return f"{signal.Signals(number).name} (signal {number})"
    except ValueError:
        return f"signal {number}"


def exit_code(outcome: Outcome, budget_reached: bool, lint_failed: bool, confirmed: bool) -> int:
    """torchlint's own failure first, then the program's fate, then the findings."""
    if lint_failed:
        return EXIT_ERROR
    if outcome.interrupted:
        return EXIT_INTERRUPTED
    if outcome.timed_out:
        return EXIT_TIMEOUT
    returncode = outcome.returncode or 0
    if returncode:
        return 128 - returncode if returncode < 0 else returncode
    if budget_reached:
        return EXIT_BUDGET
    return EXIT_CONFIRMED if confirmed else 0


def _stopped_early(opts: RunOptions, outcome: Outcome, obs: Observation) -> Optional[str]:
    if outcome.timed_out:
        return f"the program was stopped at the --timeout of {opts.timeout:g} s; a longer one may reach it"
    if obs.budget_reached:
        return (f"the program was stopped after {obs.steps} optimizer step(s) by --max-steps; a larger budget "
                "(0: none) may reach it")
    if outcome.interrupted:
        return "the program was interrupted"
    return None


def _unfinished(static: list[Finding]) -> str:
    """Budget honesty: what the run did not judge because it was stopped early."""
    def listed(verdict: str) -> str:
        hit = [f for f in static if f.runtime and f.runtime.verdict == verdict]
        shown = ", ".join(f"{f.code} {f.path}:{f.row}" for f in hit[:6]) + (", ..." if len(hit) > 6 else "")
        return f"{len(hit)}" + (f" ({shown})" if hit else "")

    return (f"the run was stopped early: not reached: {listed('not-reached')}; reached but cut short: "
            f"{listed('not-observed')}; `--full` (or a larger --max-steps/--timeout) judges the whole program")


def _status(opts: RunOptions, outcome: Outcome, obs: Observation, cwd: Path) -> str:
    command = shlex.join(opts.command)
    budget = f"--max-steps {opts.max_steps}; --full runs the whole program"
    if outcome.interrupted:
        how = "was interrupted"
    elif outcome.timed_out:
        how = f"was stopped at the --timeout of {opts.timeout:g} s"
    elif obs.budget_reached and not outcome.returncode:
        how = f"was stopped after {obs.steps} optimizer step(s) by the step budget ({budget})"
    elif obs.budget_reached:
        how = (f"exited with code {outcome.returncode} after the step budget ({budget}) stopped a process at "
               f"{obs.steps} optimizer step(s)")
    elif outcome.returncode is not None and outcome.returncode < 0:
        how = f"was killed by {signal_name(-outcome.returncode)} after {obs.steps} optimizer step(s)"
    else:
        how = f"exited with code {outcome.returncode} after {obs.steps} optimizer step(s)"
    lines = [f"torchlint run: `{command}` {how} in {outcome.wall_seconds:.1f} s; "
             f"{obs.processes} Python process(es) monitored, "
             f"{len(obs.files)} file(s) of yours executed"]
    if outcome.timed_out:
        lines.append(f"error: the program did not finish within the --timeout of {opts.timeout:g} s")
    if not obs.processes:
        lines.append("warning: no Python process of the command loaded the monitors (a Python started with -I or "
                     "-E ignores PYTHONPATH), so nothing could be confirmed")
    return "\n".join(lines)
