"""Runs slices and probes in a sandboxed worker process and attaches verdicts to findings.

Safety (see SECURITY.md): the worker is `python -I` in a fresh temporary
directory, started through a short-lived launcher (`_launch.py`) whose own environment is
already reduced to what Python and CUDA need, so neither the worker nor its parent's
/proc entry holds tokens. The launcher enters a new user + network namespace when the
kernel allows it. A watchdog thread sums the resident memory of the worker's whole process
group and kills it past `--verify-memory` (default 2 GiB; this works on CUDA builds too),
with an address-space limit as a backstop on CPU-only runs. Each probe has a timeout and
the whole run an overall `--verify-budget`. Only allow-listed slices (checked in this
process, re-derived from the source, never taken from a cache) and our probes run.

Speed: torch is imported once per worker; identical requests run once, and verdicts,
errors and timeouts are cached on disk, keyed by torchlint version, the hash of the
verdict code, torch version, device and the exact request."""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Optional

from torchlint import __version__, integrity
from torchlint.cache import cache_subdir
from torchlint.diagnostics import Finding
from torchlint.safe_io import RefusedFile, read_regular_file, replace_atomically
from torchlint.verify.plan import ProbeRequest, clean_facts, plan, verdict_code_hash

WORKER = Path(__file__).resolve().parent / "_worker.py"
LAUNCHER = Path(__file__).resolve().parent / "_launch.py"
_ENV_KEEP = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "SYSTEMROOT", "CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH",
             "CUDA_HOME", "NVIDIA_VISIBLE_DEVICES", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
STARTUP_TIMEOUT = 180.0
CPU_ADDRESS_SPACE = 16 * 1024**3
DEFAULT_MEMORY = 2 * 1024**3
DEFAULT_BUDGET = 900.0
VERDICTS = ("confirmed", "not-reproduced", "demonstrated", "not-applicable", "skipped", "error")
_FORMAT = 2
_MAX_ENTRY_BYTES = 16384
_WATCH_MARGIN = 64 * 2**20  # what a fast allocation can add between two 10 ms polls


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


def _resident(pid: str, page: int) -> int:
    with open(f"/proc/{pid}/statm", "rb") as fh:
        return int(fh.read().split()[1]) * page


def _tree_memory(pgid: int) -> int:
    """Resident bytes of every process in the group: the launcher, the worker, DataLoader
    workers it forked, processes a probe spawned. Shared pages count once per process:
    an overestimate, which errs on the side of the limit."""
    page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
    total = 0
    try:
        entries = os.listdir("/proc")
    except OSError:
        return 0
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
            if int(fields[2]) != pgid:  # field 5 of stat: process group
                continue
            total += _resident(entry, page)
        except (OSError, IndexError, ValueError):
            continue
    return total


class ProbeWorker:
    """One worker process (behind its launcher); restarted after a timeout, crash or
    memory kill."""

    def __init__(self, timeout: float, limit_memory: bool, script: Path = WORKER,
                 memory_limit: int = DEFAULT_MEMORY) -> None:
        self.script = script
        self.timeout = timeout
        self.limit_memory = limit_memory  # add the address-space backstop (CPU-only runs)
        self.memory_limit = memory_limit
        self.proc: Optional[subprocess.Popen] = None
        self.info: dict[str, Any] = {}
        self._buffer = b""
        self._eof = False
        self._tmp: Optional[tempfile.TemporaryDirectory] = None
        self._next_id = 0
        self._killed_for_memory = 0
        self._watch_stop = threading.Event()
        self._watcher: Optional[threading.Thread] = None

    def _env(self, home: str) -> dict[str, str]:
        env = {k: os.environ[k] for k in _ENV_KEEP if k in os.environ}
        env.update(HOME=home, TMPDIR=home, PYTHONDONTWRITEBYTECODE="1", PYTHONUNBUFFERED="1",
                   OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "2"))
        return env

    def start(self) -> dict[str, Any]:
        self._tmp = tempfile.TemporaryDirectory(prefix="torchlint-verify-")
        self._stderr = open(os.path.join(self._tmp.name, "stderr.log"), "wb")
        limit = max(CPU_ADDRESS_SPACE, self.memory_limit * 4) if self.limit_memory else 0
        self.proc = subprocess.Popen(
            [sys.executable, "-I", str(LAUNCHER), str(self.script), str(limit)], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=self._stderr, cwd=self._tmp.name, env=self._env(self._tmp.name),
            start_new_session=(os.name == "posix"),
        )
        self._buffer = b""
        self._eof = False
        self._killed_for_memory = 0
        self._watch_stop = threading.Event()
        if sys.platform.startswith("linux") and self.memory_limit:
            self._watcher = threading.Thread(target=self._watch, args=(self.proc, self._watch_stop), daemon=True)
            self._watcher.start()
        line = self._read_line(STARTUP_TIMEOUT)
        if line is None:
            reason = self._failure("starting the probe worker")
            self.stop()
            raise RuntimeError(reason)
        self.info = json.loads(line)
        return self.info

    def _watch(self, proc: subprocess.Popen, done: threading.Event) -> None:
        page = os.sysconf("SC_PAGE_SIZE")
        while not done.wait(0.01):
            used = _tree_memory(proc.pid)
            try:  # the limit covers torchlint too, so the whole tree stays under it
                own = _resident("self", page)
            except (OSError, ValueError, IndexError):
                own = 0
            if used + own + _WATCH_MARGIN > self.memory_limit:
                self._killed_for_memory = used + own
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except OSError:
                    pass
                return

    def _read_line(self, timeout: float) -> Optional[bytes]:
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                self._eof = True  # the worker died
                return None
            self._buffer += chunk
            if len(self._buffer) > 1 << 20:
                return None  # a worker does not send megabytes: treat as broken
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line

    def _failure(self, what: str, timeout: Optional[float] = None) -> str:
        assert self.proc is not None
        if self._eof:
            try:  # its stdout closed: it is exiting; reap it to learn how it ended
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        if self._killed_for_memory:
            return (f"{what} was stopped: with torchlint itself its processes held "
                    f"{self._killed_for_memory / 2**20:.0f} MiB, at the --verify-memory limit of "
                    f"{self.memory_limit / 2**20:.0f} MiB")
        code = self.proc.poll()
        if code is None:
            return f"{what} timed out after {timeout if timeout is not None else self.timeout:g}s"
        if code < 0:
            return f"{what}: the probe process was killed by signal {signal.Signals(-code).name}"
        tail = ""
        try:
            self._stderr.flush()
            text = Path(self._stderr.name).read_text(errors="replace").strip().splitlines()
            tail = f": {text[-1][:200]}" if text else ""
        except OSError:
            pass
        return f"{what}: the probe process exited with status {code}{tail}"

    def run(self, request: dict[str, Any], timeout: Optional[float] = None) -> dict[str, str]:
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        assert self.proc is not None and self.proc.stdin is not None
        self._next_id += 1
        payload = dict(request, id=self._next_id)
        try:
            self.proc.stdin.write((json.dumps(payload) + "\n").encode())
            self.proc.stdin.flush()
        except OSError:
            pass
        limit = min(self.timeout, timeout) if timeout is not None else self.timeout
        line = self._read_line(limit)
        if line is None:
            evidence = self._failure("the probe", limit)
            self.stop()
            return {"verdict": "error", "evidence": evidence}
        try:
            answer = json.loads(line)
            verdict, evidence = answer["verdict"], answer["evidence"]
        except (ValueError, KeyError, TypeError):
            self.stop()
            return {"verdict": "error", "evidence": "the probe worker sent a malformed answer"}
        if verdict not in VERDICTS or not isinstance(evidence, str):
            return {"verdict": "error", "evidence": "the probe worker sent a malformed answer"}
        return {"verdict": verdict, "evidence": evidence[:1000]}

    def stop(self) -> None:
        self._watch_stop.set()
        if self.proc is not None:
            if self.proc.poll() is None or os.name == "posix":
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)  # the launcher, worker and anything they started
                except (OSError, AttributeError):
                    self.proc.kill()
            self.proc.wait()
            for stream in (self.proc.stdin, self.proc.stdout):
                try:
                    if stream is not None:
                        stream.close()
                except OSError:
                    pass
            self.proc = None
        if self._tmp is not None:
            self._stderr.close()
            self._tmp.cleanup()
            self._tmp = None


class VerdictCache:
    """One JSON file per request key under `<cache>/verify/`. The CLI hands over a cache
    directory only after torchlint.cache.refusal accepted it (not tracked by git, not put
    outside the project by a config file). Entries are data: read with a size cap, without
    following symlinks, and validated exactly (types, verdict names, lengths, the key they
    claim); anything else is a miss and is overwritten."""

    def __init__(self, root: Optional[Path]) -> None:
        self.root = root / "verify" if root is not None else None

    @staticmethod
    def key(request: ProbeRequest, device: str, torch: str, code_hash: str, limits: tuple) -> str:
        blob = json.dumps([__version__, code_hash, request.identity(), device, torch, list(limits), _FORMAT],
                          sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()

    @staticmethod
    def located_key(finding: Finding, digest: str, device: str, torch: str, code_hash: str, limits: tuple) -> str:
        """The same verdict, found by where the finding is in which text of the file."""
        where = [finding.code, finding.row, finding.col, finding.end_row, finding.end_col]
        facts = sorted((k, v) for k, v in clean_facts(finding.probe_params))
        blob = json.dumps([__version__, code_hash, digest, where, facts, device, torch, list(limits), _FORMAT, "at"])
        return hashlib.sha256(blob.encode()).hexdigest()

    def get(self, key: str) -> Optional[dict[str, str]]:
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
        if type(data) is not dict or set(data) != {"key", "verdict", "evidence", "mac"} \
                or not integrity.unseal(data, self._untrusted()):
            return None  # not ours: a cache shipped with the tree, or written without a key
        if data["key"] != key or type(data["verdict"]) is not str or data["verdict"] not in VERDICTS \
                or data["verdict"] == "skipped" or type(data["evidence"]) is not str or len(data["evidence"]) > 1000:
            return None
        return {"verdict": data["verdict"], "evidence": data["evidence"]}

    def put(self, key: str, result: dict[str, str]) -> None:
        if self.root is None or result["verdict"] == "skipped":
            return  # a skip (budget ran out) is not a fact about torch
        try:
            entry = integrity.seal({"key": key, "verdict": result["verdict"], "evidence": result["evidence"]},
                                   self._untrusted())
            if entry is not None and cache_subdir(self.root.parent, self.root.name, create=True) is not None:
                replace_atomically(str(self.root / f"{key}.json"), json.dumps(entry).encode("utf-8"))
        except OSError:
            pass

    def _untrusted(self) -> list[str]:
        """Where the MAC key must not lie: the cache and the directory torchlint checks from."""
        return [str(self.root.parent), os.getcwd()] if self.root is not None else [os.getcwd()]


def verify_findings(findings: list[Finding], device: str = "auto", timeout: float = 60.0,
                    cache_dir: Optional[Path] = None, sources: Optional[Callable[[str], Optional[str]]] = None,
                    memory_limit: int = DEFAULT_MEMORY, budget: float = DEFAULT_BUDGET) -> None:
    """Attach a `verify` dict to every finding: {"runs": [{device, verdict, evidence, torch}],
    "verdict": ...}. `sources(path)` gives the current text of a finding's file."""
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
    cuda: Optional[bool] = None
    memo: dict[str, dict[str, str]] = {}
    deadline = time.monotonic() + budget
    try:
        def get_worker() -> ProbeWorker:
            nonlocal worker
            if worker is None:
                # CUDA initialisation reserves far more address space than any limit we
                # could set, so the address-space backstop applies only when CUDA cannot
                # be used; the RSS watchdog applies everywhere.
                worker = ProbeWorker(timeout, limit_memory=(device == "cpu" or "+cpu" in torch),
                                     memory_limit=memory_limit)
                worker.start()
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
        for finding in findings:
            runs = []
            planned: Optional[tuple[Optional[ProbeRequest], Optional[str]]] = None
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
                    planned = plan(finding, source_of(finding.path))
                request, reason = planned
                if request is None:
                    if not runs:
                        runs.append({"device": dev, "verdict": "skipped", "evidence": reason, "torch": torch})
                    continue
                key = cache.key(request, dev, torch, code_hash, limits)
                result = memo.get(key) or cache.get(key)
                if result is None:
                    left = deadline - time.monotonic()
                    if left <= 1:
                        result = {"verdict": "skipped", "evidence": f"the --verify time budget of {budget:g}s ran out"}
                    else:
                        try:
                            # A slice gets a third of the time: a slow one still leaves the
                            # fact probe time to answer.
                            payload = dict(request.as_json(), device=dev, slice_seconds=min(timeout, left) / 3)
                            result = get_worker().run(payload, timeout=left)
                        except RuntimeError as exc:  # the worker could not even start
                            result = {"verdict": "error", "evidence": str(exc)}
                        if result["verdict"] == "error" and "timed out" in result["evidence"] and left < timeout:
                            result = {"verdict": "skipped",
                                      "evidence": f"the --verify time budget of {budget:g}s ran out"}
                        cache.put(key, result)
                memo[key] = result
                if located is not None:
                    cache.put(located, result)
                    memo[located] = result
                runs.append({"device": dev, "torch": _runtime_version(worker, torch), **result})
            finding.verify = {"runs": runs, "verdict": summarize(runs)}
    finally:
        if worker is not None:
            worker.stop()


def _runtime_version(worker: Optional[ProbeWorker], fallback: str) -> str:
    return str(worker.info.get("torch", fallback)) if worker is not None and worker.info else fallback


def summarize(runs: list[dict[str, str]]) -> str:
    verdicts = [r["verdict"] for r in runs]
    for verdict in ("confirmed", "demonstrated", "error", "not-reproduced", "not-applicable", "skipped"):
        if verdict in verdicts:
            return verdict
    return "skipped"
