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
from pathlib import Path
from typing import Any, Callable, Optional

from torchlint import __version__, integrity
from torchlint.cache import cache_subdir
from torchlint.diagnostics import Finding
from torchlint.safe_io import RefusedFile, read_regular_file, replace_atomically
from torchlint.verify.plan import ProbeRequest, clean_facts, notebook_view, plan, verdict_code_hash
from torchlint.verify.process import (  # noqa: F401 - ProbeWorker and the limits are used through here
    CPU_ADDRESS_SPACE, DEFAULT_BUDGET, DEFAULT_MEMORY, LAUNCHER, STARTUP_TIMEOUT, VERDICTS, WORKER, ProbeWorker,
    SandboxRefused, clean_text)

_FORMAT = 3
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
    def located_key(finding: Finding, digest: str, device: str, torch: str, code_hash: str, limits: tuple) -> str:
        """The same verdict, found by where the finding is in which text of the file."""
        where = [finding.code, finding.row, finding.col, finding.end_row, finding.end_col]
        facts = sorted((k, v) for k, v in clean_facts(finding.probe_params))
        blob = json.dumps([__version__, code_hash, finding.path, digest, where, facts, device, torch, list(limits),
                           _FORMAT, "at"])
        return hashlib.sha256(blob.encode()).hexdigest()

    def get(self, key: str) -> Optional[dict[str, Any]]:  # str values, and the sandbox layers
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
        if type(data) is not dict or set(data) != {"key", "verdict", "evidence", "sandbox", "mac"} \
                or not integrity.unseal(data, self._untrusted()):
            return None  # not ours: a cache shipped with the tree, or written without a key
        layers = data["sandbox"]
        if type(layers) is not list or len(layers) > 32 or not all(type(x) is str and len(x) <= 200 for x in layers):
            return None
        if data["key"] != key or type(data["verdict"]) is not str or data["verdict"] not in VERDICTS \
                or type(data["evidence"]) is not str or len(data["evidence"]) > 1000:
            return None
        return {"verdict": data["verdict"], "evidence": clean_text(data["evidence"]), "sandbox": layers}

    def put(self, key: str, result: dict[str, str], skip_is_a_fact: bool = False) -> None:
        if self.root is None or result["verdict"] == "skipped" and not skip_is_a_fact:
            return  # a skip of this run (budget ran out, no sandbox) is not a fact about torch
        try:
            entry = integrity.seal({"key": key, "verdict": result["verdict"], "evidence": result["evidence"],
                                    "sandbox": list(result.get("sandbox") or [])}, self._untrusted())
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
    """Attach a `verify` dict to every finding: {"runs": [{device, verdict, evidence, torch,
    sandbox}], "verdict": ...}. `sources(path)` gives the current text of a finding's file.
    Each file gets a fresh sandboxed process: what runs for one file cannot touch another's.
    `unsandboxed` (the CLI's --verify-unsandboxed only) runs without the layers that cannot
    be established; the underscored arguments simulate other kernels in tests."""
    torch = torch_version()
    cache = VerdictCache(cache_dir)
    code_hash = verdict_code_hash()
    texts: dict[str, Optional[str]] = {}

    def source_of(path: str) -> Optional[str]:
        if path not in texts:
            texts[path] = sources(path) if sources is not None else None
        return texts[path]

    digests: dict[str, Optional[str]] = {}

    def digest_of(path: str) -> Optional[str]:
        if path not in digests:
            text = source_of(path)
            digests[path] = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest() if text else None
        return digests[path]

    limits = (timeout, memory_limit)
    worker: Optional[ProbeWorker] = None
    worker_path: Optional[str] = None
    refused: Optional[str] = None if unsandboxed or sys.platform.startswith("linux") else \
        f"there is no OS sandbox for {sys.platform}"
    cuda: Optional[bool] = None
    memo: dict[str, dict[str, Any]] = {}
    deadline = time.monotonic() + budget
    try:
        def get_worker() -> ProbeWorker:
            nonlocal worker, refused
            if refused is not None:
                raise SandboxRefused(refused)
            if worker is None:
                # CUDA initialisation reserves far more address space than any limit we
                # could set, so the address-space backstop applies only when CUDA cannot
                # be used; the RSS watchdog applies everywhere.
                worker = ProbeWorker(timeout, limit_memory=(device == "cpu" or "+cpu" in torch),
                                     memory_limit=memory_limit, project=project, unsandboxed=unsandboxed,
                                     namespaces=_namespaces, simulate_missing=_simulate_missing)
                try:
                    worker.start()
                except SandboxRefused as exc:
                    refused, worker = str(exc), None
                    raise
            return worker

        def cuda_available() -> bool:
            nonlocal cuda
            if cuda is None and "+cpu" in torch:
                cuda = False  # a CPU build: no need to start a worker to ask
            if cuda is None:
                try:
                    cuda = bool(get_worker().info.get("cuda"))
                except RuntimeError:
                    cuda = False
            return cuda

        devices = ["cpu"] if device == "cpu" else ["cuda"] if device == "cuda" else ["cpu", "cuda"]
        for finding in sorted(findings, key=lambda f: f.path):
            if finding.path != worker_path and worker is not None:
                worker.next_file()  # no state, no process, no file survives into the next file's process
            worker_path = finding.path
            runs: list[dict[str, Any]] = []
            planned: Optional[tuple[Optional[ProbeRequest], Optional[str], bool]] = None
            for dev in devices:
                if dev == "cuda" and not cuda_available():
                    if device == "cuda":
                        runs.append({"device": "cuda", "verdict": "skipped", "torch": torch,
                                     "evidence": "CUDA requested but torch.cuda.is_available() is False here"})
                    continue
                # A request is a function of the file's text, the finding and our code: a
                # verdict stored under that is found again without slicing.
                digest = digest_of(finding.path)
                located = cache.located_key(finding, digest, dev, torch, code_hash, limits) if digest else None
                known = (memo.get(located) or cache.get(located)) if located else None
                if known is not None:
                    memo[located] = known  # type: ignore[index]
                    runs.append({"device": dev, "torch": _runtime_version(worker, torch), **known})
                    continue
                if planned is None:
                    planned = _plan_safely(finding, source_of(finding.path))
                request, reason, failed = planned
                if request is None:
                    if not runs:
                        runs.append({"device": dev, "verdict": "error" if failed else "skipped", "evidence": reason,
                                     "torch": torch})
                    continue
                key = cache.key(request, dev, torch, code_hash, limits, finding.path, digest)
                result = memo.get(key) or cache.get(key)
                if result is None:
                    decided = False  # by the worker, from torch and the request alone (needs CUDA)
                    left = deadline - time.monotonic()
                    if left <= 1:
                        result = {"verdict": "skipped", "evidence": f"the --verify time budget of {budget:g}s ran out"}
                    else:
                        try:
                            # A slice gets a third of the time: a slow one still leaves the
                            # fact probe time to answer.
                            payload = dict(request.as_json(), device=dev, slice_seconds=min(timeout, left) / 3)
                            active = get_worker()
                            result = active.run(payload, timeout=left)
                            decided = not result["evidence"].startswith("the --verify sandbox here")
                            result = dict(result, sandbox=active.all_layers)
                        except SandboxRefused as exc:
                            refused = refused or str(exc)
                            result = {"verdict": "skipped", "evidence": (
                                f"not run: the --verify sandbox cannot be established here ({exc}), so no "
                                "checked code ran; --verify-unsandboxed runs it anyway, for code you trust")}
                        except RuntimeError as exc:  # the worker could not even start
                            result = {"verdict": "error", "evidence": str(exc)}
                        if result["verdict"] == "error" and "timed out" in result["evidence"] and left < timeout:
                            result = {"verdict": "skipped",
                                      "evidence": f"the --verify time budget of {budget:g}s ran out"}
                        cache.put(key, result, decided)
                        if located is not None:
                            cache.put(located, result, decided)
                elif located is not None:
                    cache.put(located, result)
                memo[key] = result
                if located is not None:
                    memo[located] = result
                runs.append({"device": dev, "torch": _runtime_version(worker, torch), **result})
            finding.verify = {"runs": runs, "verdict": summarize(runs)}
    finally:
        if worker is not None:
            worker.finish()


def _plan_safely(finding: Finding, source: Optional[str]) -> tuple[Optional[ProbeRequest], str, bool]:
    """plan() on the finding's program: a notebook's code cells up to the finding's (as the
    kernel ran them), else the file. Never raises: a slicing bug is this finding's `error`
    verdict (the flag), and every other finding is still verified."""
    try:
        if finding.cell is not None and source is not None:
            view = notebook_view(finding, source)
            finding, source = view if view is not None else (finding, None)
        request, reason = plan(finding, source)
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


def _runtime_version(worker: Optional[ProbeWorker], fallback: str) -> str:
    return str(worker.info.get("torch", fallback)) if worker is not None and worker.info else fallback


def summarize(runs: list[dict[str, str]]) -> str:
    verdicts = [r["verdict"] for r in runs]
    for verdict in ("confirmed", "demonstrated", "error", "not-reproduced", "not-applicable", "skipped"):
        if verdict in verdicts:
            return verdict
    return "skipped"
