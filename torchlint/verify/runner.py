"""Runs probes in a sandboxed worker process and attaches verdicts to findings.

Safety: the worker is `python -I` (no user site, no PYTHONPATH), in a fresh temporary
directory, with an environment reduced to what Python and CUDA need (no tokens or other
secrets), a per-probe timeout, and an address-space limit when CUDA is not in play
(`--device cpu`, or a CPU build of torch). It runs only
our probes and self-contained snippets; a hang, crash or memory blow-up becomes an `error`
verdict for that finding and a fresh worker takes the next probe.

Speed: torch is imported once per worker; identical probes (same rule, values, snippet and
device) run once, and verdicts are cached on disk keyed by torch version and device."""

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
import time
from pathlib import Path
from typing import Any, Optional

from torchlint.diagnostics import Finding
from torchlint.verify.plan import ProbeRequest, plan

WORKER = Path(__file__).resolve().parent / "_worker.py"
_ENV_KEEP = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "SYSTEMROOT", "CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH",
             "CUDA_HOME", "NVIDIA_VISIBLE_DEVICES", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
STARTUP_TIMEOUT = 180.0
CPU_ADDRESS_SPACE = 16 * 1024**3
_FORMAT = 1


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


class ProbeWorker:
    """One worker process; restarted after a timeout or crash."""

    def __init__(self, timeout: float, limit_memory: bool, script: Path = WORKER) -> None:
        self.script = script
        self.timeout = timeout
        self.limit_memory = limit_memory
        self.proc: Optional[subprocess.Popen] = None
        self.info: dict[str, Any] = {}
        self._buffer = b""
        self._eof = False
        self._tmp: Optional[tempfile.TemporaryDirectory] = None
        self._next_id = 0

    def _env(self, home: str) -> dict[str, str]:
        env = {k: os.environ[k] for k in _ENV_KEEP if k in os.environ}
        env.update(HOME=home, TMPDIR=home, PYTHONDONTWRITEBYTECODE="1", PYTHONUNBUFFERED="1",
                   OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "2"))
        return env

    def _limits(self) -> None:  # runs in the child before exec
        os.setsid()
        if self.limit_memory:
            try:
                import resource
                resource.setrlimit(resource.RLIMIT_AS, (CPU_ADDRESS_SPACE, CPU_ADDRESS_SPACE))
            except (ImportError, ValueError, OSError):
                pass

    def start(self) -> dict[str, Any]:
        self._tmp = tempfile.TemporaryDirectory(prefix="torchlint-verify-")
        self._stderr = open(os.path.join(self._tmp.name, "stderr.log"), "wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-I", str(self.script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self._stderr, cwd=self._tmp.name, env=self._env(self._tmp.name),
            preexec_fn=self._limits if os.name == "posix" else None,
        )
        self._buffer = b""
        self._eof = False
        line = self._read_line(STARTUP_TIMEOUT)
        if line is None:
            reason = self._failure("starting the probe worker")
            self.stop()
            raise RuntimeError(reason)
        self.info = json.loads(line)
        return self.info

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
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line

    def _failure(self, what: str) -> str:
        assert self.proc is not None
        if self._eof:
            try:  # its stdout closed: it is exiting; reap it to learn how it ended
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        code = self.proc.poll()
        if code is None:
            return f"{what} timed out after {self.timeout:g}s"
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

    def run(self, request: dict[str, Any]) -> dict[str, str]:
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
        line = self._read_line(self.timeout)
        if line is None:
            evidence = self._failure("the probe")
            self.stop()
            return {"verdict": "error", "evidence": evidence}
        answer = json.loads(line)
        return {"verdict": answer["verdict"], "evidence": answer["evidence"]}

    def stop(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except (OSError, AttributeError):
                    self.proc.kill()
            self.proc.wait()
            self.proc = None
        if self._tmp is not None:
            self._stderr.close()
            self._tmp.cleanup()
            self._tmp = None


class VerdictCache:
    def __init__(self, root: Optional[Path]) -> None:
        self.root = root / "verify" if root is not None else None

    @staticmethod
    def key(request: ProbeRequest, device: str, torch: str) -> str:
        blob = json.dumps([request.code, request.params, request.snippet, device, torch, _FORMAT], sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()

    def get(self, key: str) -> Optional[dict[str, str]]:
        if self.root is None:
            return None
        try:
            data = json.loads((self.root / f"{key}.json").read_text(encoding="utf-8"))
            if data.get("key") == key and data.get("verdict") in ("confirmed", "not-reproduced"):
                return {"verdict": data["verdict"], "evidence": data["evidence"]}
        except (OSError, ValueError, AttributeError):
            pass
        return None

    def put(self, key: str, result: dict[str, str]) -> None:
        if self.root is None or result["verdict"] not in ("confirmed", "not-reproduced"):
            return  # errors and skips are not facts about torch: retry them next time
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.root, prefix=".tmp-")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(dict(result, key=key), fh)
            os.replace(tmp, self.root / f"{key}.json")
        except OSError:
            pass


def verify_findings(findings: list[Finding], device: str = "auto", timeout: float = 60.0,
                    cache_dir: Optional[Path] = None) -> None:
    """Attach a `verify` dict to every finding: {"runs": [{device, verdict, evidence, torch}]}."""
    torch = torch_version()
    cache = VerdictCache(cache_dir)
    plans = [plan(f) for f in findings]
    worker: Optional[ProbeWorker] = None
    cuda: Optional[bool] = None
    memo: dict[str, dict[str, str]] = {}
    try:
        def get_worker() -> ProbeWorker:
            nonlocal worker
            if worker is None:
                # CUDA initialisation reserves far more address space than any limit we
                # could set, so the limit applies when CUDA cannot be used: a CPU-only run,
                # or a CPU build of torch.
                worker = ProbeWorker(timeout, limit_memory=(device == "cpu" or "+cpu" in torch))
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
        for finding, (request, reason) in zip(findings, plans):
            runs = []
            for dev in devices:
                if request is None:
                    if dev == devices[0]:
                        runs.append({"device": dev, "verdict": "skipped", "evidence": reason, "torch": torch})
                    continue
                if dev == "cuda" and not cuda_available():
                    if device == "cuda":
                        runs.append({"device": "cuda", "verdict": "skipped", "torch": torch,
                                     "evidence": "CUDA requested but torch.cuda.is_available() is False here"})
                    continue
                key = cache.key(request, dev, torch)
                result = memo.get(key) or cache.get(key)
                if result is None:
                    try:
                        result = get_worker().run(dict(request.as_json(), device=dev))
                    except RuntimeError as exc:  # the worker could not even start
                        result = {"verdict": "error", "evidence": str(exc)}
                    cache.put(key, result)
                memo[key] = result
                runs.append({"device": dev, "torch": _runtime_version(worker, torch), **result})
            finding.verify = {"runs": runs, "verdict": summarize(runs)}
    finally:
        if worker is not None:
            worker.stop()


def _runtime_version(worker: Optional[ProbeWorker], fallback: str) -> str:
    return str(worker.info.get("torch", fallback)) if worker is not None and worker.info else fallback


def summarize(runs: list[dict[str, str]]) -> str:
    verdicts = [r["verdict"] for r in runs]
    for verdict in ("confirmed", "error", "not-reproduced", "skipped"):
        if verdict in verdicts:
            return verdict
    return "skipped"
