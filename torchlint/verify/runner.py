"""Runs slices and probes in sandboxed worker processes and attaches verdicts to findings.

Safety (see SECURITY.md): each file's findings go to a fresh process under the OS sandbox
(process.py starts and watches it; sandbox.py sets it up). The allow-list (safety.py,
applied while slicing, in this process, from the source, never from a cache) is a
pre-filter only. When the sandbox cannot be established, nothing runs and the findings
are `skipped`. Each probe has a timeout and the whole run an overall `--verify-budget`.

Speed: torch is imported once per run, in a fork server that gives each file a process of
its own (process.py, _forkserver.py); identical requests of one file run once, and verdicts,
errors and timeouts are cached on disk, keyed by torchlint version, the hash of the
verdict code, torch version, device, the exact request and the file (path and text
digest: no file's worker can answer for another file)."""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable, Optional

from torchlint import __version__, integrity
from torchlint.cache import cache_subdir
from torchlint.diagnostics import Finding
from torchlint.records import YOUR_CODE, RecordError, Verdict, Verification
from torchlint.safe_io import RefusedFile, read_regular_file, replace_atomically
from torchlint.verify.claims import as_claimed
from torchlint.verify.plan import (USES_PROJECT, ProbeRequest, batch_programs, clean_facts, notebook_view, plan,
                                   verdict_code_hash, with_project)
from torchlint.verify.project import ProjectTree
from torchlint.verify.process import (  # noqa: F401 - ProbeWorker and the limits are used through here
    CPU_ADDRESS_SPACE, DEFAULT_BUDGET, DEFAULT_MEMORY, LAUNCHER, STARTUP_TIMEOUT, VERDICTS, WORKER, ProbeWorker,
    SandboxRefused, clean_text)

_FORMAT = 4
_MAX_ENTRY_BYTES = 16384


class VerifyUnavailable(Exception):
    """torch is not installed: the CLI exits 2 with this message."""


def torch_version() -> str:
    if importlib.util.find_spec("torch") is None:
        raise VerifyUnavailable(
            "--verify needs torch in this environment. For the CPU-only build, install torch from "
            "PyTorch's own CPU wheel index (the pip command that PyTorch's \"Get Started\" install "
            "selector gives for Compute Platform: CPU); a plain `pip install torch` on Linux installs "
            "the multi-GB CUDA build. Then install torchlint with its `verify` extra.")
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


class VerdictCache:
    """One JSON file per request key under `<cache>/verify/`. The CLI hands over a cache
    directory only after torchlint.cache.refusal accepted it (not tracked by git, not put
    outside the project by a config file). Entries are data: read with a size cap, without
    following symlinks, and validated exactly (types, verdict names, lengths, the key they
    claim); anything else is a miss and is overwritten."""

    def __init__(self, root: Optional[Path]) -> None:
        self.root = root / "verify" if root is not None else None

    @staticmethod
    def key(request: ProbeRequest, device: str, torch: str, code_hash: str, limits: tuple, path: str,
            digest: Optional[str]) -> str:
        """Per file (its path and text): a worker's answers only ever apply to the file it was
        started for, so code escaping in a.py cannot answer b.py's identical request."""
        blob = json.dumps([__version__, code_hash, request.identity(), device, torch, list(limits), _FORMAT, path,
                           digest], sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()

    @staticmethod
    def located_key(finding: Finding, digest: str, device: str, torch: str, code_hash: str, limits: tuple,
                    tree: str = "") -> str:
        """The same verdict, found by where the finding is in which text of the file (and,
        for a rule that may import the project, which text of the whole project: `tree`)."""
        where = [finding.code, finding.row, finding.col, finding.end_row, finding.end_col]
        facts = sorted((k, v) for k, v in clean_facts(finding.probe_params))
        blob = json.dumps([__version__, code_hash, finding.path, digest, where, facts, device, torch, list(limits),
                           _FORMAT, "at", tree])
        return hashlib.sha256(blob.encode()).hexdigest()

    def get(self, key: str) -> Optional[Verdict]:
        if self.root is None or cache_subdir(self.root.parent, self.root.name) is None:
            return None
        try:
            raw = read_regular_file(str(self.root / f"{key}.json"), _MAX_ENTRY_BYTES, follow_symlinks=False)
        except (OSError, RefusedFile):
            return None
        try:
            data = json.loads(raw.decode("utf-8"))
        except (ValueError, UnicodeDecodeError, RecursionError):
            return None
        if type(data) is not dict or set(data) != {"key", "verdict", "mac"} or data["key"] != key \
                or not integrity.unseal(data, self._untrusted()):
            return None  # not ours: a cache shipped with the tree, or written without a key
        try:
            verdict = Verdict.from_json(data["verdict"])
        except RecordError:
            return None
        return replace(verdict, evidence=clean_text(verdict.evidence))

    def put(self, key: str, result: Verdict, skip_is_a_fact: bool = False) -> None:
        if self.root is None or result.verdict == "skipped" and not skip_is_a_fact:
            return  # a skip of this run (budget ran out, no sandbox) is not a fact about torch
        try:
            entry = integrity.seal({"key": key, "verdict": result.to_json()}, self._untrusted())
            if entry is not None and cache_subdir(self.root.parent, self.root.name, create=True) is not None:
                replace_atomically(str(self.root / f"{key}.json"), json.dumps(entry).encode("utf-8"))
        except OSError:
            pass

    def _untrusted(self) -> list[str]:
        """Where the MAC key must not lie: the cache and the directory torchlint checks from."""
        return [str(self.root.parent), os.getcwd()] if self.root is not None else [os.getcwd()]


def verify_findings(findings: list[Finding], device: str = "auto", timeout: float = 60.0,
                    cache_dir: Optional[Path] = None, sources: Optional[Callable[[str], Optional[str]]] = None,
                    memory_limit: int = DEFAULT_MEMORY, budget: float = DEFAULT_BUDGET, project: str = "",
                    unsandboxed: bool = False, _namespaces: bool = True,
                    _simulate_missing: tuple[str, ...] = ()) -> None:
    """Attach a Verification (records.py) to every finding: one Verdict per device.
    `sources(path)` gives the current text of a finding's file. Each file gets a fresh
    sandboxed process: what runs for one file cannot touch another's. `project` (the checked
    tree's root) is granted to the worker read-only, so it can import the file's module.
    `unsandboxed` (the CLI's --verify-unsandboxed only) runs without the layers that cannot
    be established; the underscored arguments simulate other kernels in tests."""
    tree = _project_tree(project, findings)
    session = _Session(device, timeout, cache_dir, sources, memory_limit, budget, tree, unsandboxed,
                       _namespaces, _simulate_missing)
    ordered = sorted(findings, key=lambda f: f.path)
    for finding in ordered:
        session.files.setdefault(finding.path, []).append(finding)
    try:
        for finding in ordered:
            finding.verify = session.verify(finding)
    finally:
        session.close()
        if tree is not None:
            tree.close()


def _project_tree(project: str, findings: list[Finding]) -> Optional[ProjectTree]:
    """The snapshot of the project's Python sources, when some finding may import it."""
    if not project or not any(f.code in USES_PROJECT for f in findings) or os.path.realpath(project) in (
            "/", os.path.realpath(os.path.expanduser("~"))):
        return None
    try:
        return ProjectTree(project)
    except OSError:
        return None  # no snapshot: those findings fall back to their probes


Planned = tuple[Optional[ProbeRequest], str, bool]  # (request, why not, whether planning failed)


class _Session:
    """One --verify run: the worker (started on first need, one process per file), the
    in-run memo, the verdict cache and the time budget."""

    def __init__(self, device: str, timeout: float, cache_dir: Optional[Path],
                 sources: Optional[Callable[[str], Optional[str]]], memory_limit: int, budget: float,
                 project: Optional[ProjectTree], unsandboxed: bool, namespaces: bool,
                 simulate_missing: tuple[str, ...]) -> None:
        self.device, self.timeout, self.budget, self.project = device, timeout, budget, project
        self.sources, self.memory_limit, self.unsandboxed = sources, memory_limit, unsandboxed
        self.namespaces, self.simulate_missing = namespaces, simulate_missing
        self.torch = torch_version()
        self.cache = VerdictCache(cache_dir)
        self.code_hash = verdict_code_hash()
        self.limits = (timeout, memory_limit)
        self.texts: dict[str, Optional[str]] = {}
        self.digests: dict[str, Optional[str]] = {}
        self.worker: Optional[ProbeWorker] = None
        self.worker_path: Optional[str] = None
        self.refused: Optional[str] = None if unsandboxed or sys.platform.startswith("linux") else \
            f"there is no OS sandbox for {sys.platform}"
        self.cuda: Optional[bool] = False if "+cpu" in self.torch else None  # a CPU build: no need to ask
        self.memo: dict[str, Verdict] = {}
        self.deadline = time.monotonic() + budget
        self.files: dict[str, list[Finding]] = {}  # each file's findings, to plan them together
        self.plans: dict[int, Planned] = {}  # by id() of the finding
        # A file's program run (verify/program.py), by its spec: each member's verdict or why
        # it fell short, or why the whole run failed. It runs once, however many members ask.
        self.programs: dict[str, "list[Verdict | str] | str"] = {}

    def plan_of(self, finding: Finding) -> Planned:
        """The finding's request, planned with the rest of its file, whose program requests
        become one run of the program (plan.batch_programs)."""
        if id(finding) not in self.plans:
            group = self.files.get(finding.path) or [finding]
            if not any(f is finding for f in group):
                group = [finding]
            source = self.source_of(finding.path)
            planned = [_plan_safely(f, source, self.project) for f in group]
            try:
                batched = batch_programs([(f, p[0]) for f, p in zip(group, planned)], source, self.project)
            except Exception:  # noqa: BLE001 - a bug here must not end the run: each keeps its own request
                batched = {}
            for i, (f, p) in enumerate(zip(group, planned)):
                self.plans[id(f)] = (batched[i], p[1], p[2]) if i in batched else p
        return self.plans[id(finding)]

    def source_of(self, path: str) -> Optional[str]:
        if path not in self.texts:
            self.texts[path] = self.sources(path) if self.sources is not None else None
        return self.texts[path]

    def digest_of(self, path: str) -> Optional[str]:
        if path not in self.digests:
            text = self.source_of(path)
            self.digests[path] = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest() if text else None
        return self.digests[path]

    def get_worker(self) -> ProbeWorker:
        if self.refused is not None:
            raise SandboxRefused(self.refused)
        if self.worker is None:
            # CUDA initialisation reserves far more address space than any limit we could
            # set, so the address-space backstop applies only when CUDA cannot be used; the
            # RSS watchdog applies everywhere.
            worker = ProbeWorker(self.timeout, limit_memory=(self.device == "cpu" or "+cpu" in self.torch),
                                 memory_limit=self.memory_limit, unsandboxed=self.unsandboxed,
                                 project=self.project.grant if self.project is not None else "",
                                 namespaces=self.namespaces, simulate_missing=self.simulate_missing)
            try:
                worker.start()
            except SandboxRefused as exc:
                self.refused = str(exc)
                raise
            self.worker = worker
        return self.worker

    def cuda_available(self) -> bool:
        if self.cuda is None:
            try:
                self.cuda = bool(self.get_worker().info.get("cuda"))
            except RuntimeError:
                self.cuda = False
        return self.cuda

    def runtime_version(self) -> str:
        info = self.worker.info if self.worker is not None else None
        return str(info.get("torch", self.torch)) if info else self.torch

    def verify(self, finding: Finding) -> Verification:
        if finding.path != self.worker_path and self.worker is not None:
            self.worker.next_file()  # no state, no process, no file survives into the next file's process
        self.worker_path = finding.path
        devices = ["cpu"] if self.device == "cpu" else ["cuda"] if self.device == "cuda" else ["cpu", "cuda"]
        runs: list[Verdict] = []
        planned: list[Planned] = []  # planned once, on the first device that needs it
        for dev in devices:
            if dev == "cuda" and not self.cuda_available():
                if self.device == "cuda":
                    runs.append(Verdict("skipped", "CUDA requested but torch.cuda.is_available() is False here",
                                        device="cuda", torch=self.torch))
                continue
            run = self.run_on(finding, dev, planned, first=not runs)
            if run is not None:
                runs.append(as_claimed(finding.code, run))
        return Verification(tuple(runs))

    def run_on(self, finding: Finding, dev: str, planned: list[Planned], first: bool) -> Optional[Verdict]:
        """The verdict on one device: remembered (memo, cache) by where the finding is in
        which text of the file, else planned and asked of the worker. None: nothing to add
        (nothing can run, and an earlier device said why)."""
        digest = self.digest_of(finding.path)
        tree = self.project.digest if self.project is not None and finding.code in USES_PROJECT else ""
        located = self.cache.located_key(finding, digest, dev, self.torch, self.code_hash, self.limits, tree) \
            if digest else None
        known = (self.memo.get(located) or self.cache.get(located)) if located else None
        if known is not None:
            self.memo[located] = known  # type: ignore[index]
            return known.on(dev, self.runtime_version())
        if not planned:
            planned.append(self.plan_of(finding))
        request, reason, failed = planned[0]
        if request is None:
            return Verdict("error" if failed else "skipped", reason, device=dev, torch=self.torch) if first else None
        key = self.cache.key(request, dev, self.torch, self.code_hash, self.limits, finding.path, digest)
        result = self.memo.get(key) or self.cache.get(key)
        if result is None:
            result, decided = self.ask(request, dev)
            result = replace(result, ran=request.ran if result.source == YOUR_CODE else ())
            self.cache.put(key, result, decided)
            if located is not None:
                self.cache.put(located, result, decided)
        elif located is not None:
            self.cache.put(located, result)
        self.memo[key] = result
        if located is not None:
            self.memo[located] = result
        return result.on(dev, self.runtime_version())

    def ask(self, request: ProbeRequest, dev: str) -> tuple[Verdict, bool]:
        """The worker's verdict, and whether it is a fact about torch and the request alone
        (so a `skipped` of it may be cached: needs CUDA), not about this run."""
        program = request.program
        if program is not None:
            member = program.pop("member")
            key = json.dumps(program, sort_keys=True)
            if key not in self.programs:
                self.programs[key] = self.run_program(request, dev)
            got = self.programs[key]
            got = got[member] if isinstance(got, list) else f"its program run failed: {got}"
            if isinstance(got, Verdict):
                return got, True
            # Fell short (or the run failed): the rule's probe, which says why; the run is not repeated.
            prior = request.not_self_contained
            request = replace(request, imported="", not_self_contained=f"{prior}; {got}" if prior else got)
        left = self.deadline - time.monotonic()
        out_of_time = Verdict("skipped", f"the --verify time budget of {self.budget:g}s ran out")
        if left <= 1:
            return out_of_time, False
        try:
            # A slice gets a third of the time: a slow one still leaves the fact probe time to answer.
            payload = dict(request.as_json(), device=dev, slice_seconds=min(self.timeout, left) / 3)
            if request.needs_project and self.project is not None:
                payload["root"] = self.project.snapshot  # where the worker finds the snapshot
            active = self.get_worker()
            # A program of its own (two runs compared): a process of its own, as run_program's.
            alone = request.import_kind == "program"
            if alone:
                active.next_file()
            result = active.run(payload, timeout=left)
            if alone:
                active.next_file()
            decided = not result.evidence.startswith("the --verify sandbox here")
            result = replace(result, sandbox=tuple(active.all_layers))
        except SandboxRefused as exc:
            self.refused = self.refused or str(exc)
            return Verdict("skipped", f"not run: the --verify sandbox cannot be established here ({exc}), so no "
                           "checked code ran; --verify-unsandboxed runs it anyway, for code you trust"), False
        except RuntimeError as exc:  # the worker could not even start
            result, decided = Verdict("error", str(exc)), False
        if result.verdict == "error" and "timed out" in result.evidence and left < self.timeout:
            return out_of_time, False
        return result, decided

    def run_program(self, request: ProbeRequest, dev: str) -> "list[Verdict | str] | str":
        """The file's program, run once for every member of `request`'s run, in a process of
        its own: the file's process is replaced before and after, so no probe's state reaches
        the program and nothing the program changed reaches a later probe."""
        left = self.deadline - time.monotonic()
        if left <= 1 or self.project is None:
            return f"the --verify time budget of {self.budget:g}s ran out"
        payload = dict(request.as_json(), device=dev, slice_seconds=min(self.timeout, left) / 3,
                       root=self.project.snapshot)
        try:
            active = self.get_worker()
            active.next_file()
            got = active.run_program(payload, timeout=left)
            active.next_file()
        except SandboxRefused as exc:
            self.refused = self.refused or str(exc)
            return str(exc)
        except RuntimeError as exc:  # the worker could not even start
            return str(exc)
        if isinstance(got, list):
            return [replace(v, sandbox=tuple(active.all_layers)) if isinstance(v, Verdict) else v for v in got]
        return got

    def close(self) -> None:
        if self.worker is not None:
            self.worker.finish()


def _plan_safely(finding: Finding, source: Optional[str],
                 project: Optional[ProjectTree] = None) -> tuple[Optional[ProbeRequest], str, bool]:
    """plan() on the finding's program: a notebook's code cells up to the finding's (as the
    kernel ran them), else the file. Never raises: a slicing bug is this finding's `error`
    verdict (the flag), and every other finding is still verified."""
    try:
        if finding.cell is not None and source is not None:
            view = notebook_view(finding, source)
            finding, source = view if view is not None else (finding, None)
        request, reason = plan(finding, source)
        if request is not None:
            request = with_project(request, finding, source, project)
        return request, reason or "", False
    except Exception as exc:  # noqa: BLE001 - one finding's failure must not end the run
        return None, clean_text(f"torchlint could not prepare this verdict: {type(exc).__name__}: {exc}", 300), True


def describe_sandbox(unsandboxed: bool = False) -> tuple[bool, str]:
    """(established, text) for --show-sandbox: starts a worker the way --verify does."""
    if not sys.platform.startswith("linux") and not unsandboxed:
        return False, f"--verify sandbox: none on {sys.platform}; --verify skips every finding here"
    worker = ProbeWorker(60.0, limit_memory=True, unsandboxed=unsandboxed)
    try:
        worker.start()
        worker.open_file()
    except SandboxRefused as exc:
        return False, f"--verify sandbox: cannot be established here ({exc}); --verify skips every finding"
    except RuntimeError as exc:
        return False, f"--verify sandbox: the worker did not start ({exc})"
    finally:
        worker.stop()
    return True, "--verify sandbox layers:\n" + "\n".join(f"  {layer}" for layer in worker.all_layers)
