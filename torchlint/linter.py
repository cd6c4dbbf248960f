"""Linting a set of files: per-file work, run in this process or in worker processes,
with results served from the cache when a file has not changed."""

from __future__ import annotations

import gc
import os
import sys
from functools import lru_cache, partial

from torchlint.budget import DEFAULT_LINT_TIMEOUT, LintTimeout, cpu_budget, describe_timeout
from torchlint.diagnostics import SYNTAX_ERROR_CODE, Finding, syntax_error_finding
from torchlint import gcpolicy
from torchlint.fast_dataclass import dataclass, field
from torchlint.rules import lazy
from torchlint.safe_io import DEFAULT_MAX_FILE_SIZE, RefusedFile, read_regular_file
from torchlint.source import DecodeFailure, SourceFile, decode_source, is_notebook

TYPE_CHECKING = False
if TYPE_CHECKING:  # the walk is imported when a file is linted: a cache hit never needs it;
    from typing import Any, Callable, Iterable, Iterator, Optional
    from torchlint.analysis.project_index import ProjectIndex
    from torchlint.cache import Cache  # the cache (hashing, the MAC key) only when it is on
    from torchlint.checker import RuleError

# Below this many files per worker, process start-up costs more than it saves (a
# pre-commit run on three files stays in one process).
MIN_FILES_PER_WORKER = 16


@dataclass(frozen=True)
class FileTask:
    """One file to lint, with the settings resolved for it."""

    path: str  # filesystem path ("-" for stdin)
    display: str  # path as shown in output
    codes: frozenset[str]
    options: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = ()
    data: Optional[bytes] = None  # stdin content
    max_bytes: int = DEFAULT_MAX_FILE_SIZE  # larger files are reported, not read
    lint_timeout: Optional[float] = DEFAULT_LINT_TIMEOUT  # CPU seconds; a slower file becomes one TL000
    fixable: frozenset[str] = frozenset()  # codes whose fixes the file's settings apply (empty: no fixing)
    unsafe_fixes: bool = False
    # Resolved directories the project index may read other modules from (the checked
    # paths; for an editor's document, its workspace too); empty: the file is judged alone.
    index_roots: tuple[str, ...] = ()


@dataclass
class FileResult:
    """One file's findings and what the cache needs of them."""

    display: str
    findings: list[Finding] = field(default_factory=list)
    internal_error: Optional[str] = None
    parse_error: Optional[Finding] = None  # also reported when TL000 is not selected
    timed_out: bool = False  # ran past lint-timeout: never cached (the next run tries again)
    deps: dict[str, Optional[str]] = field(default_factory=dict)  # other files read: path -> hash (None: absent)
    digest: Optional[str] = field(default=None, compare=False)  # hash of the bytes linted (`lint_task_hashed`)
    # The file's `stat_record`, taken before the bytes were read (`lint_task_hashed`).
    stat: Optional[tuple[int, int, int, int]] = field(default=None, compare=False)


@lru_cache(maxsize=64)
def rule_classes_for(codes: frozenset[str]) -> list[lazy.LazyRule]:
    """The rules of `codes`, each imported only once a file's text can wake it."""
    return [lazy.by_code()[c] for c in sorted(codes) if c != SYNTAX_ERROR_CODE]


def lint_bytes(task: FileTask, data: bytes) -> FileResult:
    """Lint one file's bytes within its CPU budget; past it, the file's only finding is one
    TL000 on line 1 saying so (never a part of its findings, which would depend on timing)."""
    import torchlint.checker  # noqa: F401 - imported once per process, not on this file's budget

    try:
        with cpu_budget(task.lint_timeout):
            return _lint_bytes(task, data)
    except LintTimeout:
        assert task.lint_timeout is not None
        f = syntax_error_finding(task.display, describe_timeout(task.lint_timeout), 1, 1)
        return FileResult(task.display, [f] if SYNTAX_ERROR_CODE in task.codes else [], parse_error=f, timed_out=True)


def lint_findings(task: FileTask, data: bytes, rule_errors: list[RuleError],
                  index: Optional[ProjectIndex] = None) -> list[Finding]:
    """Every finding of one file's bytes under its task's rules and options, before the filter
    by code (the parse error is among them); a failing rule adds to `rule_errors`. Errors
    outside a rule propagate. The CLI's files and the editors' documents both come here.
    `index`: the task's project index when the caller wants its `deps` (None: made here)."""
    return _lint_with_index(task, data, rule_errors, index if index is not None else project_index(task))


def project_index(task: FileTask) -> Optional[ProjectIndex]:
    """The index the file's questions about its imports go to (None: judged alone)."""
    if not task.index_roots:
        return None
    from torchlint.analysis.project_index import ProjectIndex  # and ast: a run of cache hits needs neither

    path = task.path if task.path != "-" else task.display
    return ProjectIndex(path, task.index_roots, task.max_bytes)


def new_run() -> None:
    """A new run in this process: the index forgets where modules were found (nothing to
    forget before the first index is made)."""
    index_module = sys.modules.get("torchlint.analysis.project_index")
    if index_module is not None:
        index_module.new_run()


def _lint_with_index(task: FileTask, data: bytes, rule_errors: list[RuleError],
                     index: Optional[ProjectIndex]) -> list[Finding]:
    classes = rule_classes_for(task.codes)
    options = {code: dict(values) for code, values in task.options}
    parse_all = SYNTAX_ERROR_CODE in task.codes
    if not is_notebook(task.display):
        from torchlint.checker import check_source

        return check_source(task.display, data, classes, options=options, parse_all=parse_all,
                            rule_errors=rule_errors, index=index)
    # The notebook's code, not its JSON, is held to max-file-size. Fix edits count rows
    # within their cell (fix/notebook.py writes them back into the JSON).
    from torchlint import notebook

    return notebook.lint_notebook(task.display, data, classes, options=options, parse_all=parse_all,
                                  rule_errors=rule_errors, max_code_bytes=task.max_bytes, index=index)


def _lint_bytes(task: FileTask, data: bytes) -> FileResult:
    result = FileResult(task.display)
    try:
        rule_errors: list[RuleError] = []
        index = project_index(task)
        findings = _lint_with_index(task, data, rule_errors, index)
        if index is not None:
            result.deps = dict(index.deps)
        if rule_errors:
            # One line per failing rule; the file's other findings are kept.
            result.internal_error = "\nerror: ".join(e.describe() for e in rule_errors)
        for f in findings:
            if f.code == SYNTAX_ERROR_CODE:
                result.parse_error = f
        result.findings = [f for f in findings if f.code in task.codes]
    except Exception as exc:  # a rule bug must not stop the run or print a traceback
        import traceback  # only on that error: it imports textwrap

        frame = traceback.extract_tb(exc.__traceback__)[-1]
        result.internal_error = (f"internal error while checking {task.display}: {type(exc).__name__}: {exc} "
                                 f"(at {os.path.basename(frame.filename)}:{frame.lineno}); please report this")
    return result


def read_limit(task: FileTask) -> int:
    """How many bytes the file may have. A notebook's JSON also carries cell outputs (plots,
    images) that are never linted, so it may be ten times max-file-size (its code cells
    together may not: notebook.parse_notebook holds them to max-file-size)."""
    if not is_notebook(task.display):
        return task.max_bytes
    from torchlint.notebook import SIZE_FACTOR

    return task.max_bytes * SIZE_FACTOR


def read_task(task: FileTask) -> tuple[Optional[bytes], Optional[FileResult]]:
    if task.data is not None:
        return task.data, None
    try:
        return read_regular_file(task.path, read_limit(task)), None
    except RefusedFile as exc:
        message = str(exc) if "max-file-size" in str(exc) else f"cannot read file: {exc}"
    except OSError as exc:
        message = f"cannot read file: {exc.strerror or exc}"
    f = syntax_error_finding(task.display, message, 1, 1)
    return None, FileResult(task.display, [f] if SYNTAX_ERROR_CODE in task.codes else [], parse_error=f)


def lint_task(task: FileTask) -> FileResult:
    data, failed = read_task(task)
    if failed is not None:
        return failed
    assert data is not None
    return lint_bytes(task, data)


def lint_task_hashed(task: FileTask) -> FileResult:
    """`lint_task`, also recording the hash of the bytes it linted: the cache stores a result
    under the content it came from, read once, where it was linted (the parent holds no bytes)."""
    from torchlint.cache import racy, stat_record
    from torchlint.hashing import content_hash

    stat: Optional[tuple[int, int, int, int]] = None
    if task.data is None:
        try:  # before the read: a file changed after it is re-hashed by the next run
            stat = stat_record(os.stat(task.path))
        except OSError:
            pass  # the read reports it
        if stat is not None and racy(stat):
            stat = None  # modified just before the read: an edit in the same tick keeps the mtime
    data, failed = read_task(task)
    if failed is not None:
        return failed
    assert data is not None
    result = lint_bytes(task, data)
    result.digest, result.stat = content_hash(data), stat
    return result


# A file still to lint: its place in the results, its task, and (when the cache is on) its
# settings key. The worker takes the stat record, so the parent holds none per file.
if TYPE_CHECKING:
    _Todo = tuple[int, FileTask, Optional[str]]


def run_tasks(tasks: list[FileTask], jobs: Optional[int] = None, cache: Optional["Cache"] = None,
              progress: Optional[Callable[[int, int], None]] = None) -> list[FileResult]:
    """Lint every task, reusing cached results, in worker processes when it pays off.
    Results come back in task order, so output is identical for any `jobs`. `progress` is
    told `(files done, files in all)` after each file (the CLI's progress line)."""
    results: list[Optional[FileResult]] = [None] * len(tasks)
    new_run()  # modules may have appeared or gone since the last run in this process
    # A file to lint travels as its path: the worker reads and hashes it, so the parent never
    # holds the bytes of the files (its memory stays flat in the bytes linted).
    todo: list[_Todo] = []
    keys: dict[tuple, str] = {}  # one settings key string for the many tasks that share it
    for i, task in enumerate(tasks):
        record = None
        if cache is not None and task.data is None:
            from torchlint.cache import settings_key

            shared = (task.codes, task.options, task.index_roots)
            settings = keys.get(shared) or keys.setdefault(
                shared, settings_key(task.codes, task.options, cache.roots_key(task.index_roots)))
            try:
                hit, _, digest = cache.lookup(task.path, settings, task.display, os.stat(task.path), read_limit(task))
            except (OSError, RefusedFile):
                hit = None  # the worker's read reports it
            if hit is not None:
                results[i] = FileResult(task.display, hit[0], parse_error=hit[1], deps=hit[2], digest=digest)
                continue
            record = settings
        todo.append((i, task, record))

    work = lint_task_hashed if cache is not None else lint_task
    # One file: no later file's collections to spare, so no collection after it (a few ms).
    lint = partial(gcpolicy.settled, work) if len(todo) > 1 else work
    workers = min(jobs or os.cpu_count() or 1, max(1, len(todo) // MIN_FILES_PER_WORKER))
    cached = len(tasks) - len(todo)
    with gcpolicy.batch():
        if workers > 1:
            from concurrent.futures import ProcessPoolExecutor  # only runs big enough to need it pay the import

            _preload(todo[0][1].codes)
            with ProcessPoolExecutor(max_workers=workers, mp_context=_mp_context(), initializer=gc.disable) as pool:
                chunk = max(1, min(64, len(todo) // (workers * 8)))
                # Taken as they come: each result is stored in the cache (its entry file) when
                # it arrives, not after the whole run.
                _keep(todo, _counted(pool.map(lint, [t for _, t, _ in todo], chunksize=chunk), cached, len(tasks),
                                     progress), results, cache)
        else:
            _keep(todo, _counted((lint(t) for _, t, _ in todo), cached, len(tasks), progress), results, cache)
    return results  # type: ignore[return-value]


def _keep(todo: list[_Todo],
          done: Iterable[FileResult], results: list[Optional[FileResult]], cache: Optional["Cache"]) -> None:
    """Put each result in its place, and in the cache where its task asked (see run_tasks).
    Results are kept until the output: their `deps` share one string per path and hash, and
    each result's stat record is dropped once used, so the parent stays small in the files."""
    strings: dict[Optional[str], Optional[str]] = {}
    for j, result in enumerate(done):
        i, task, record = todo[j]
        todo[j] = (i, task, None)
        results[i] = result
        result.display = task.display  # the task's string, not the worker's copy of it
        result.deps = {strings.setdefault(k, k): strings.setdefault(v, v) for k, v in result.deps.items()}  # type: ignore[misc]
        if record is not None and result.digest is not None and result.internal_error is None \
                and not result.timed_out:
            assert cache is not None
            # The stat was taken before the read: a file changed in between is re-hashed next run.
            cache.store(task.path, record, result.digest, result.stat, result.findings, result.parse_error,
                        result.deps)
        result.stat = None


def _counted(results: Iterable[FileResult], cached: int, total: int,
             progress: Optional[Callable[[int, int], None]]) -> Iterator[FileResult]:
    """The results, in order, telling `progress` of each as it comes (the `cached` hits count as done)."""
    if progress is None:
        yield from results
        return
    progress(cached, total)
    for done, result in enumerate(results, cached + 1):
        progress(done, total)
        yield result


def _preload(codes: frozenset[str]) -> None:
    """Import the walk and the selected rules before forking, so workers share them instead
    of each importing its own copy (one-file runs import only what the file wakes)."""
    import torchlint.checker  # noqa: F401

    for rule in rule_classes_for(codes):
        rule.load()


def _mp_context():  # type: ignore[no-untyped-def]
    # fork starts workers in milliseconds and shares the already-imported rules; fall back
    # to the platform default where fork is unavailable (Windows, macOS default).
    import multiprocessing

    try:
        return multiprocessing.get_context("fork") if sys.platform.startswith("linux") else None
    except ValueError:  # pragma: no cover
        return None


def load_source(task: FileTask) -> Optional[SourceFile]:
    """The decoded text of a task's file (or stdin), for code frames in text output."""
    data, failed = read_task(task)
    if failed is not None or data is None:
        return None
    if is_notebook(task.display):
        from torchlint import notebook

        return notebook.load_source(task.display, data)
    try:
        return SourceFile(task.display, decode_source(data))
    except DecodeFailure:
        return None
