"""The application layer under every face: `check(CheckRequest) -> CheckReport` resolves the
settings, finds the files, lints them (through the cache), applies fixes or noqa comments,
runs --verify, and collects what a face renders. No click here: the CLI, `torchlint run`,
the language server, the flake8 plugin and the benchmarks parse their own input, call this,
and decide how to show the report and what to exit with.

Lines meant for the user as they happen (`warning: ...`, `error: ...`) go to
`CheckRequest.notify`, in the order the old CLI printed them; a problem that stops the
check (bad config, unreadable stdin) raises `CheckError`, which faces turn into exit 2."""

from __future__ import annotations

import os
import sys
from functools import lru_cache

from torchlint.config import DEFAULT_VERIFY_TIMEOUT, CliOverrides, ConfigError, ConfigResolver, Settings
from torchlint.diagnostics import CONFIG_ERROR, INTERNAL_ERROR, SYNTAX_ERROR_CODE, Finding, tool_finding
from torchlint.fast_dataclass import dataclass, field, replace
from torchlint.files import Discovery, display_path
from torchlint.linter import (FileResult, FileTask, lint_findings, load_source, new_run, project_index, rule_classes_for,
                              run_tasks)
from torchlint.project_root import project_root
from torchlint.safe_io import format_size, printable

TYPE_CHECKING = False
if TYPE_CHECKING:  # the cache (hashing) and notebooks are imported when a run uses them
    from pathlib import Path  # paths are strings and os.path: a one-file run never imports pathlib (~4 ms)
    from typing import Any, Callable, Optional, Union

    PathLike = Union[str, os.PathLike[str]]
    from torchlint.checker import RuleError
    from torchlint.fix.files import FixReport
    from torchlint.notebook import Notebook

LINT, SHOW_FILES, ADD_NOQA, FIX_ONLY = "lint", "show-files", "add-noqa", "fix-only"


class CheckError(Exception):
    """The check cannot go on (bad configuration, bad input): faces print it and exit 2."""


def _ignore(line: str) -> None:
    pass


def _read_stdin(limit: int) -> bytes:
    return sys.stdin.buffer.read(limit)


@dataclass(frozen=True)
class VerifyRequest:
    """How --verify runs its probes."""

    device: str = "auto"
    unsandboxed: bool = False
    verified_only: bool = False


@dataclass
class CheckRequest:
    """What to check and how: a face's parsed input to `check`."""

    paths: Optional[list[str]]  # files or directories; ["-"]: the source on stdin; None: "." (or stdin)
    overrides: CliOverrides = field(default_factory=CliOverrides)
    config_path: Optional[PathLike] = None
    isolated: bool = False
    stdin_filename: Optional[str] = None
    force_exclude: bool = False
    jobs: Optional[int] = None
    no_cache: bool = False
    cache_dir: Optional[PathLike] = None
    action: str = LINT  # or SHOW_FILES, ADD_NOQA, FIX_ONLY (the fixes, and no findings)
    apply_fixes: bool = True  # where the file's settings ask for them (`torchlint run` never fixes)
    write_fixes: bool = True  # False: --diff (fixes are computed, not written)
    show_fixes: Optional[Callable[["FixReport"], None]] = None  # called once fixes are written
    verify: Optional[VerifyRequest] = None
    warn_empty_directories: bool = True
    cwd: Optional[PathLike] = None
    resolver: Optional[ConfigResolver] = None  # settings already resolved for these overrides
    notify: Callable[[str], None] = _ignore
    progress: Optional[Callable[[int, int], None]] = None  # (files linted, files in all), after each file
    read_stdin: Callable[[int], bytes] = _read_stdin


class Sources(dict):
    """Decoded source files by display path, loaded on first use (code frames, --verify).
    Only the most recently used few are kept: outputs walk the findings file by file, and
    holding every file with a finding grew the process with the bytes linted (37 MB over 8
    copies of transformers' models/). A file asked for again is read again."""

    KEPT = 16

    def __init__(self, tasks: list[FileTask]) -> None:
        super().__init__()
        self._tasks = {t.display: t for t in tasks}

    def get(self, key: str, default: Any = None) -> Any:
        if key in self:
            value = self[key] = self.pop(key)  # the most recently used goes last
        else:
            task = self._tasks.get(key)
            value = self[key] = load_source(task) if task is not None else None
            while len(self) > self.KEPT:
                del self[next(iter(self))]
        return value


@dataclass
class CheckReport:
    """What `check` found, for a face to render."""

    resolver: ConfigResolver
    cwd: str  # resolved
    tasks: list[FileTask]
    missing: list[str]  # paths that do not exist
    results: list[FileResult] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)  # sorted
    parse_errors: list[Finding] = field(default_factory=list)  # every parse failure (SARIF notifications)
    internal_errors: int = 0  # files a rule crashed on, or left unchecked past lint-timeout
    fix_report: Optional["FixReport"] = None  # None: no file asked for (or had) fixes
    noqa_added: int = 0
    noqa_errors: list[str] = field(default_factory=list)
    sources: Sources = field(default_factory=lambda: Sources([]))
    cache_root: Optional[str] = None  # the lint cache used, if any

    @property
    def settings(self) -> Settings:
        """The settings of the run as a whole (cache, --verify limits, SARIF rule list)."""
        return self.resolver.default

    @property
    def enabled(self) -> list[str]:
        return sorted({code for task in self.tasks for code in task.codes} or self.settings.enabled)


def check(request: CheckRequest) -> CheckReport:
    cwd = os.path.realpath(request.cwd or os.getcwd())
    try:
        resolver = request.resolver or resolver_for(request, cwd)
        # Like ruff: `--stdin-filename` with no paths reads the source from stdin too.
        paths = request.paths if request.paths is not None else (["-"] if request.stdin_filename else ["."])
        tasks, missing = build_tasks(paths, resolver, cwd, request)
    except ConfigError as exc:
        raise CheckError(str(exc)) from None
    if request.warn_empty_directories:
        _warn_empty_directories(paths, tasks, request.notify)
    report = CheckReport(resolver, cwd, tasks, missing, sources=Sources(tasks))
    if request.action == SHOW_FILES:
        return report
    # --verify builds probes from the findings: lint afresh rather than trust cached ones.
    cache_root = None if request.no_cache else cache_root_for(request.cache_dir, resolver, request.notify)
    cache = None
    if cache_root is not None:
        from torchlint.cache import Cache

        cache = Cache(cache_root, resolver.default.root, read=request.verify is None)
    report.cache_root = cache_root
    report.results = run_tasks(tasks, jobs=request.jobs, cache=cache, progress=request.progress)
    if request.action == ADD_NOQA:
        _add_noqa(report)
        return report
    report.fix_report = _fix(report, request) if request.apply_fixes else None
    if request.action == FIX_ONLY:
        return report
    _collect(report, request.notify)
    if request.verify is not None and report.findings:
        _verify(report, request.verify, cache_root)
    return report


def resolver_for(request: CheckRequest, cwd: Optional[PathLike] = None) -> ConfigResolver:
    """The settings for a request's files (raises ConfigError)."""
    return ConfigResolver(request.overrides, config_path=request.config_path, isolated=request.isolated, cwd=cwd)


_NO_FIXES: frozenset[str] = frozenset()  # one for every task: an empty frozenset is 216 bytes each


def task_for(path: PathLike, display: str, settings: Settings, data: Optional[bytes] = None,
             index_roots: tuple[str, ...] = ()) -> FileTask:
    """One file's task, carrying the settings resolved for it and where the project index
    may read the modules it imports."""
    spelled = str(path)
    spelled = display if spelled == display else spelled  # one string, not two: a run keeps every task
    return FileTask(path=spelled if data is None else "-", display=display, codes=settings.codes_for(path),
                    options=rule_options(settings.options), data=data, max_bytes=settings.max_file_size,
                    lint_timeout=settings.lint_timeout,
                    fixable=settings.fixable if settings.fix else _NO_FIXES, unsafe_fixes=settings.unsafe_fixes,
                    index_roots=index_roots)


def document_roots(path: PathLike, cwd: PathLike) -> tuple[str, ...]:
    """Where a single document's index may look (stdin, an editor): the working directory
    and the document's own directory, resolved; none for nameless stdin."""
    if str(path) == "-":
        return ()
    return tuple(dict.fromkeys([os.path.realpath(cwd), os.path.realpath(os.path.dirname(os.path.abspath(path)))]))


def build_tasks(paths: list[str], resolver: ConfigResolver, cwd: str,
                request: CheckRequest) -> tuple[list[FileTask], list[str]]:
    """The files to lint (or stdin, for `-`) and the paths that do not exist."""
    if paths == ["-"]:
        name = request.stdin_filename or "-"
        settings = resolver.for_file(name) if request.stdin_filename else resolver.default
        if request.force_exclude and request.stdin_filename and settings.is_excluded(name):
            return [], []
        return [task_for(name, name, settings, _stdin(request, settings.max_file_size),
                         document_roots(name, cwd))], []
    if not paths:
        return [], []
    if "-" in paths:
        raise CheckError("`-` (stdin) cannot be combined with other paths")
    discovery = Discovery(resolver, force_exclude=request.force_exclude, project_root=lambda: project_root(cwd))
    found = list(discovery.iter_files(paths))
    # Where the index may read: the checked paths (complete once they are walked) and the
    # git work trees of the files named, not the working directory, so the findings and their
    # cache entries are the same from any cwd; and the project a config file roots, so that
    # pre-commit's staged files are judged with the same knowledge of their imports as a run
    # over the whole project.
    roots = tuple(discovery.index_roots)
    with_config: dict[str, tuple[str, ...]] = {}  # one tuple per config root, shared by its tasks
    tasks = [task_for(path, display_path(path, cwd), settings, index_roots=_index_roots(roots, settings, with_config))
             for path, settings in found]
    for path, why in discovery.skipped:
        request.notify(f"warning: {display_path(path, cwd)}: skipped: {why}")
    return tasks, discovery.missing


def _index_roots(checked: tuple[str, ...], settings: Settings,
                 shared: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """The checked paths, plus the directory of the file's config file when it has one (kept
    in `shared`, by that directory)."""
    if settings.config_path is None:
        return checked
    root = os.path.realpath(settings.root)
    if root not in shared:
        shared[root] = tuple(dict.fromkeys(checked + (root,)))
    return shared[root]


def _stdin(request: CheckRequest, max_bytes: int) -> bytes:
    data = request.read_stdin(max_bytes + 1)
    if len(data) > max_bytes:
        raise CheckError(f"standard input is larger than max-file-size ({format_size(max_bytes)}); "
                         f"raise `--max-file-size` to check it")
    return data


# One tuple per distinct set of rule options, shared by the tasks that have it: a task each
# would make a run's memory grow with its files. Few sets exist; the bound is for long-lived processes.
_OPTIONS: dict[tuple, tuple] = {}


def rule_options(options: dict[str, dict[str, Any]]) -> tuple:
    """Rule options as a hashable, picklable tuple (the cache key and the worker's input)."""
    found = tuple(sorted((code, tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in values.items())))
                         for code, values in options.items()))
    if len(_OPTIONS) > 64:
        _OPTIONS.clear()
    return _OPTIONS.setdefault(found, found)


def cache_root_for(cache_dir: Optional[PathLike], resolver: ConfigResolver,
                   notify: Callable[[str], None]) -> Optional[str]:
    """The cache directory to use, or None (with a warning) when it must not be used:
    tracked by git, or placed outside the project by a config file."""
    from torchlint.cache import CACHE_DIR_NAME, refusal as cache_refusal

    settings = resolver.default
    root = os.fspath(cache_dir or settings.cache_dir or os.path.join(settings.root, CACHE_DIR_NAME))
    why = cache_refusal(root, settings.root, from_config=cache_dir is None)
    if why is not None:
        notify(f"warning: {printable(why)}")
        return None
    return root


def _warn_empty_directories(paths: list[str], tasks: list[FileTask], notify: Callable[[str], None]) -> None:
    """ruff warns when a directory holds nothing to check; a silent "All checks passed!"
    for a typo'd or fully excluded directory would read as a clean bill of health."""
    checked = [os.path.abspath(t.path) for t in tasks if t.path != "-"]
    for raw in paths:
        if raw == "-" or not os.path.isdir(raw):
            continue
        prefix = os.path.join(os.path.abspath(raw), "")
        if not any(p.startswith(prefix) for p in checked):
            notify(f"warning: no Python files found under {printable(raw)}")


def _add_noqa(report: CheckReport) -> None:
    from torchlint.fix.files import add_noqa_to_files

    report.noqa_added, report.noqa_errors = add_noqa_to_files(report.tasks, report.results)
    report.noqa_errors += [r.internal_error for r in report.results if r.internal_error]


def _fix(report: CheckReport, request: CheckRequest) -> Optional["FixReport"]:
    """Apply fixes where a file's settings ask for them (`--fix` or `fix = true`); None when
    no file does, so LibCST is never imported for a plain lint run."""
    if not any(t.fixable for t, r in zip(report.tasks, report.results) if any(f.fix for f in r.findings)):
        return None
    from torchlint.fix.files import fix_results
    from torchlint.fix.policy import FixPolicy

    def policy_for(task: FileTask) -> FixPolicy:
        return FixPolicy(task.fixable, task.unsafe_fixes)

    fixed = fix_results(report.tasks, report.results, policy_for, write=request.write_fixes)
    for error in fixed.errors:
        request.notify(f"error: {error}")
    if request.show_fixes is not None and request.write_fixes:
        request.show_fixes(fixed)
    return fixed


def _collect(report: CheckReport, notify: Callable[[str], None]) -> None:
    """Sorted findings, every parse failure, and how many files hit an internal error.
    Problems that are not findings are notified."""
    for task, result in zip(report.tasks, report.results):
        if result.internal_error:
            notify(f"error: {result.internal_error}")
            report.internal_errors += 1
        error = result.parse_error
        if error is not None:
            report.parse_errors.append(error)
            if error.code not in task.codes:
                notify(f"warning: {error.path}:{error.row}:{error.col}: {error.message}")
                if result.timed_out:  # valid code left unchecked: the run must not pass silently
                    report.internal_errors += 1
        report.findings.extend(result.findings)
    report.findings.sort(key=Finding.sort_key)


def _verify(report: CheckReport, verify: VerifyRequest, cache_root: Optional[str]) -> None:
    from pathlib import Path

    from torchlint.verify.runner import DEFAULT_BUDGET, DEFAULT_MEMORY, verify_findings

    settings = report.settings
    memory = settings.verify_memory  # the command line's value, else the config's (lower only)
    verify_findings(report.findings, device=verify.device, timeout=settings.verify_timeout or DEFAULT_VERIFY_TIMEOUT,
                    cache_dir=Path(cache_root) if cache_root else None, sources=lambda path: getattr(report.sources.get(path), "text", None),
                    memory_limit=memory * 2**20 if memory else DEFAULT_MEMORY,
                    budget=settings.verify_budget or DEFAULT_BUDGET, unsandboxed=verify.unsandboxed,
                    project=str(getattr(report.resolver.default, "root", None) or report.cwd))
    if verify.verified_only:
        report.findings = [f for f in report.findings if f.verify and f.verify.verified]


def write_output_file(path: str, text: str, roots: list[Path], option: str = "--output-file") -> None:
    """The report to `-o PATH` (or the file of `option`), never through a symlink the checked tree planted."""
    from torchlint.output.output_file import OutputFileError, write_report

    try:
        write_report(path, text, roots)
    except OutputFileError as exc:
        raise CheckError(f"{option} {printable(path)}: {exc}") from None
    except OSError as exc:
        raise CheckError(f"{option} {printable(path)}: {exc.strerror or exc}") from None


# -- editors: one in-memory document, linted as `check` would lint that file ------------------

@lru_cache(maxsize=8)
def document_resolver(cwd: str) -> ConfigResolver:
    """One resolver per working directory, reused across documents (it caches config files)."""
    return ConfigResolver(CliOverrides(), cwd=cwd)


def config_error_finding(path: str, error: ConfigError) -> Finding:
    """TL002, which `ignore = ["TL000"]` (or flake8's `--ignore TL000`) does not hide."""
    return tool_finding(CONFIG_ERROR, path, f"torchlint configuration error: {error}")


def rule_error_finding(path: str, error: RuleError) -> Finding:
    return tool_finding(INTERNAL_ERROR, path, f"torchlint {error.describe()}")


def document_task(path: PathLike, display: str, resolver: Optional[ConfigResolver], data: bytes = b"") -> FileTask:
    """The task `check` would make for `path` (raises ConfigError). No CPU budget: an editor
    lints one document at a time, on its own schedule."""
    cwd = os.path.realpath(os.getcwd())
    settings = (resolver or document_resolver(cwd)).for_file(path)
    return replace(task_for(path, display, settings, data, document_roots(path, cwd)), lint_timeout=None)


def lint_document(path: Path, data: bytes, resolver: Optional[ConfigResolver] = None,
                  display: Optional[str] = None, deps: Optional[dict[str, Optional[str]]] = None) -> list[Finding]:
    """Findings for `data` as the contents of `path` (which need not exist on disk yet),
    with the rules and options the CLI would use for that path. A configuration error
    becomes one finding on line 1, so an editor shows it instead of going quiet; an error
    outside a rule propagates (the face reports it). `deps`, when given, receives the other
    files the project index read (path -> hash, None: absent), as the cache records them."""
    display = display or str(path)
    try:
        task = document_task(path, display, resolver, data)
    except ConfigError as exc:
        return [config_error_finding(display, exc)]
    rule_errors: list[RuleError] = []
    new_run()  # an editor lints on every change: modules may have appeared since
    index = project_index(task)
    findings = lint_findings(task, data, rule_errors, index)
    if deps is not None and index is not None:
        deps.update(index.deps)
    # A failing rule costs its own findings only: the editor shows one line saying so.
    return [f for f in findings if f.code in task.codes] + [rule_error_finding(display, e) for e in rule_errors]


def lint_notebook_cells(path: Path, notebook: Notebook, resolver: Optional[ConfigResolver] = None) -> list[Finding]:
    """Findings for an open notebook's code cells, configured as the CLI would configure
    the .ipynb at `path`. A configuration error is reported on the first code cell."""
    try:
        task = document_task(path, notebook.path, resolver)
    except ConfigError as exc:
        error = config_error_finding(notebook.path, exc)
        return [replace(error, cell=notebook.cells[0].number)] if notebook.cells else []
    from torchlint.notebook import lint_cells

    rule_errors: list[RuleError] = []
    new_run()
    findings = lint_cells(notebook, rule_classes_for(task.codes), options={c: dict(v) for c, v in task.options},
                          parse_all=SYNTAX_ERROR_CODE in task.codes, rule_errors=rule_errors,
                          index=project_index(replace(task, path=str(path))))
    first_cell = notebook.cells[0].number if notebook.cells else None
    return [f for f in findings if f.code in task.codes] + [
        replace(rule_error_finding(notebook.path, e), cell=first_cell) for e in rule_errors]
