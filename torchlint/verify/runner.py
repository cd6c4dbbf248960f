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
from torchlint.verify._frames import MAX_FRAME
from torchlint.verify.plan import ProbeRequest, clean_facts, plan, verdict_code_hash
from torchlint.verify.sandbox import make_parent_undumpable, policy

WORKER = Path(__file__).resolve().parent / "_worker.py"
LAUNCHER = Path(__file__).resolve().parent / "_launch.py"
_ENV_KEEP = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "SYSTEMROOT", "CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH",
             "CUDA_HOME", "NVIDIA_VISIBLE_DEVICES", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
STARTUP_TIMEOUT = 180.0
CPU_ADDRESS_SPACE = 16 * 1024**3
DEFAULT_MEMORY = 2 * 1024**3
DEFAULT_BUDGET = 900.0
VERDICTS = ("confirmed", "not-reproduced", "demonstrated", "not-applicable", "skipped", "error")
_FORMAT = 3
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


def _process_table() -> dict[int, tuple[int, int]]:
    """pid -> (ppid, uid) of every process we can see."""
    table = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return table
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                ppid = int(fh.read().rsplit(b")", 1)[1].split()[1])
            table[int(entry)] = (ppid, os.stat(f"/proc/{entry}").st_uid)
        except (OSError, IndexError, ValueError):
            continue
    return table


def sandbox_processes(root: int, uid: Optional[int]) -> list[int]:
    """The launcher `root`, everything below it (it is a child subreaper, so daemons and
    setsid() children stay below it) and, when the worker runs as a uid of its own, every
    process of that uid: the whole sandbox, however a process detached."""
    table = _process_table()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found = {root} if root in table else set()
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    if uid is not None:
        found.update(pid for pid, (_, owner) in table.items() if owner == uid)
    return sorted(found)


def _tree_memory(root: int, uid: Optional[int] = None) -> int:
    """Resident bytes of every process of the sandbox. Shared pages count once per
    process: an overestimate, which errs on the side of the limit."""
    page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
    total = 0
    for pid in sandbox_processes(root, uid):
        try:
            total += _resident(str(pid), page)
        except (OSError, IndexError, ValueError):
            continue
    return total


def kill_sandbox(root: int, uid: Optional[int]) -> None:
    """Stop, then kill, every process of the sandbox until none is left (a stopped process
    cannot fork); the launcher last, so its subtree cannot escape to us meanwhile."""
    for _ in range(200):
        left = [p for p in sandbox_processes(root, uid) if p != root]
        if not left:
            break
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            for pid in left:
                try:
                    os.kill(pid, sig)
                except OSError:
                    pass
        time.sleep(0.001)
    try:
        os.kill(root, signal.SIGKILL)
    except OSError:
        pass


_CONTROL = {c: f"\\x{c:02x}" for c in list(range(32)) + [127]}
_CONTROL.update({c: f"\\u{c:04x}" for c in (0x85, 0x2028, 0x2029, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069)})


def clean_text(text: str, limit: int = 1000) -> str:
    """Evidence is data from the sandbox: no control characters (so no new lines, escape
    sequences or bidi tricks) and never a line that starts like a workflow command."""
    text = text[:limit].translate(_CONTROL)
    return "\u200b" + text if text.startswith("::") else text


class SandboxRefused(RuntimeError):
    """The sandbox could not be established here: no checked code ran."""


class ProbeWorker:
    """One sandboxed worker (behind its launcher) for the findings of one file; restarted
    after a timeout, crash or memory kill. Its answers arrive as length-prefixed frames on
    a pipe of its own and are validated here; its stdout and stderr go to a log file."""

    def __init__(self, timeout: float, limit_memory: bool, script: Path = WORKER,
                 memory_limit: int = DEFAULT_MEMORY, project: str = "", unsandboxed: bool = False,
                 namespaces: bool = True, simulate_missing: tuple[str, ...] = ()) -> None:
        self.script = script
        self.timeout = timeout
        self.limit_memory = limit_memory  # add the address-space backstop (CPU-only runs)
        self.memory_limit = memory_limit
        self.project = project
        self.unsandboxed = unsandboxed
        self.namespaces = namespaces  # False simulates a kernel without usable namespaces
        self.simulate_missing = simulate_missing  # tests: act as if these layers were missing
        self.proc: Optional[subprocess.Popen] = None
        self.info: dict[str, Any] = {}
        self.layers: list[str] = []
        self.uid: Optional[int] = None
        self._buffer = b""
        self._eof = False
        self._channel: Optional[int] = None
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
        self.launch()
        return self.handshake()

    def launch(self) -> None:
        """Start the launcher and return at once: torch imports meanwhile (see handshake)."""
        make_parent_undumpable()
        self._tmp = tempfile.TemporaryDirectory(prefix="torchlint-verify-")
        work = os.path.join(self._tmp.name, "work")
        os.mkdir(work, 0o700)
        self._stderr = open(os.path.join(self._tmp.name, "stderr.log"), "wb")
        limit = max(CPU_ADDRESS_SPACE, self.memory_limit * 4) if self.limit_memory else 0
        cfg = policy(self._tmp.name, self.project, namespaces=self.namespaces, unsandboxed=self.unsandboxed,
                     address_space=limit, cpu_seconds=int(DEFAULT_BUDGET + 60),
                     simulate_missing=self.simulate_missing,
                     extra_read=() if self.script == WORKER else (str(self.script),))
        read_end, write_end = os.pipe()
        cfg["channel"] = write_end
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", str(LAUNCHER), str(self.script), json.dumps(cfg)], stdin=subprocess.PIPE,
                stdout=self._stderr, stderr=self._stderr, cwd=work, env=self._env(work),
                start_new_session=(os.name == "posix"), pass_fds=(write_end,),
            )
        finally:
            os.close(write_end)
        self._channel = read_end
        self._buffer = b""
        self._eof = False
        self._killed_for_memory = 0
        self._watch_stop = threading.Event()
        if sys.platform.startswith("linux") and self.memory_limit:
            self._watcher = threading.Thread(target=self._watch, args=(self.proc, self._watch_stop), daemon=True)
            self._watcher.start()

    def handshake(self) -> dict[str, Any]:
        """The launcher's trusted frame (the layers, or why it refused), then the worker's hello."""
        first = self._read_frame(STARTUP_TIMEOUT)
        if first is not None and first.get("kind") == "refused" and type(first.get("reason")) is str:
            reason = clean_text(first["reason"], 500)
            self.stop()
            raise SandboxRefused(reason)
        layers = first.get("layers") if first is not None and first.get("kind") == "sandbox" else None
        if type(layers) is not list or not all(type(x) is str for x in layers):
            reason = self._failure("starting the probe worker")
            self.stop()
            raise RuntimeError(reason)
        self.layers = [clean_text(x, 200) for x in layers[:32]]
        self.uid = next((int(x[4:]) for x in self.layers if x.startswith("uid ") and x[4:].isdigit()), None)
        hello = self._read_frame(STARTUP_TIMEOUT)
        if hello is None or hello.get("kind") != "hello":
            reason = self._failure("starting the probe worker")
            self.stop()
            raise RuntimeError(reason)
        self.info = {"torch": clean_text(str(hello.get("torch")), 40), "cuda": hello.get("cuda") is True}
        return self.info

    def _watch(self, proc: subprocess.Popen, done: threading.Event) -> None:
        page = os.sysconf("SC_PAGE_SIZE")
        while not done.wait(0.01):
            used = _tree_memory(proc.pid, self.uid)
            try:  # the limit covers torchlint too, so the whole tree stays under it
                own = _resident("self", page)
            except (OSError, ValueError, IndexError):
                own = 0
            if used + own + _WATCH_MARGIN > self.memory_limit:
                self._killed_for_memory = used + own
                kill_sandbox(proc.pid, self.uid)
                return

    def _read_frame(self, timeout: float) -> Optional[dict[str, Any]]:
        """The next frame as a dict, or None (timeout, end of stream, or anything malformed:
        the worker is then treated as broken)."""
        assert self._channel is not None
        deadline = time.monotonic() + timeout
        while True:
            if len(self._buffer) >= 4:
                size = int.from_bytes(self._buffer[:4], "big")
                if size > MAX_FRAME:
                    return None
                if len(self._buffer) >= 4 + size:
                    data, self._buffer = self._buffer[4:4 + size], self._buffer[4 + size:]
                    try:
                        frame = json.loads(data.decode("utf-8"))
                    except (ValueError, UnicodeDecodeError, RecursionError):
                        return None
                    return frame if type(frame) is dict else None
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self._channel], [], [], left)
            if not ready:
                return None
            chunk = os.read(self._channel, 65536)
            if not chunk:
                self._eof = True  # the worker died
                return None
            self._buffer += chunk

    def _failure(self, what: str, timeout: Optional[float] = None) -> str:
        assert self.proc is not None
        if self._eof:
            try:  # its channel closed: it is exiting; reap it to learn how it ended
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
            tail = f": {clean_text(text[-1], 200)}" if text else ""
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
        # The parent enforces the time: a worker that ignores SIGALRM is killed all the same.
        limit = min(self.timeout, timeout) if timeout is not None else self.timeout
        answer = self._read_frame(limit)
        if answer is None:
            evidence = self._failure("the probe", limit)
            self.stop()
            return {"verdict": "error", "evidence": evidence}
        verdict, evidence = answer.get("verdict"), answer.get("evidence")
        if set(answer) != {"kind", "id", "verdict", "evidence", "source"} or answer["kind"] != "answer" \
                or answer["id"] != self._next_id or type(answer["id"]) is not int \
                or type(verdict) is not str or verdict not in VERDICTS or type(evidence) is not str:
            self.stop()  # what sent that cannot be trusted with the next request
            return {"verdict": "error", "evidence": "the probe worker sent a malformed answer"}
        return {"verdict": verdict, "evidence": clean_text(evidence)}

    def stop(self) -> None:
        self._watch_stop.set()
        if self.proc is not None:
            if os.name == "posix" and sys.platform.startswith("linux"):
                kill_sandbox(self.proc.pid, self.uid)
            else:
                self.proc.kill()
            self.proc.wait()
            if self.proc.stdin is not None:
                try:
                    self.proc.stdin.close()
                except OSError:
                    pass
            self.proc = None
        if self._channel is not None:
            os.close(self._channel)
            self._channel = None
        if self._tmp is not None:
            self._stderr.close()
            _make_removable(self._tmp.name)
            self._tmp.cleanup()
            self._tmp = None


def _make_removable(top: str) -> None:
    """The worker's uid owned the files it wrote: take them back before deleting them."""
    if os.getuid() != 0:
        return
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            try:
                os.lchown(os.path.join(dirpath, name), 0, 0)
            except OSError:
                pass


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
        if type(data) is not dict or set(data) != {"key", "verdict", "evidence", "sandbox", "mac"} \
                or not integrity.unseal(data, self._untrusted()):
            return None  # not ours: a cache shipped with the tree, or written without a key
        layers = data["sandbox"]
        if type(layers) is not list or len(layers) > 32 or not all(type(x) is str and len(x) <= 200 for x in layers):
            return None
        if data["key"] != key or type(data["verdict"]) is not str or data["verdict"] not in VERDICTS \
                or data["verdict"] == "skipped" or type(data["evidence"]) is not str or len(data["evidence"]) > 1000:
            return None
        return {"verdict": data["verdict"], "evidence": clean_text(data["evidence"]), "sandbox": layers}

    def put(self, key: str, result: dict[str, str]) -> None:
        if self.root is None or result["verdict"] == "skipped":
            return  # a skip (budget ran out) is not a fact about torch
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
    Each file gets a fresh sandboxed worker: what runs for one file cannot touch another's.
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
    spare: Optional[ProbeWorker] = None  # the next file's worker, importing torch meanwhile
    paths = sorted({f.path for f in findings})
    refused: Optional[str] = None if unsandboxed or sys.platform.startswith("linux") else \
        f"there is no OS sandbox for {sys.platform}"
    cuda: Optional[bool] = None
    memo: dict[str, dict[str, str]] = {}
    deadline = time.monotonic() + budget
    try:
        def get_worker() -> ProbeWorker:
            nonlocal worker, refused, spare
            if refused is not None:
                raise SandboxRefused(refused)
            if worker is None and spare is not None:
                worker, spare = spare, None
                try:
                    worker.handshake()
                except SandboxRefused as exc:
                    refused, worker = str(exc), None
                    raise
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
            if spare is None and worker_path != paths[-1]:
                # A fresh worker for the next file starts now, so its torch import overlaps
                # this file's probes. It shares nothing with this one.
                spare = ProbeWorker(timeout, limit_memory=(device == "cpu" or "+cpu" in torch),
                                    memory_limit=memory_limit, project=project, unsandboxed=unsandboxed,
                                    namespaces=_namespaces, simulate_missing=_simulate_missing)
                spare.launch()
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
                worker.stop()  # no state, no process, no file survives into the next file's worker
                worker = None
            worker_path = finding.path
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
                            active = get_worker()
                            result = dict(active.run(payload, timeout=left), sandbox=active.layers)
                        except SandboxRefused as exc:
                            result = {"verdict": "skipped", "evidence": (
                                f"not run: the --verify sandbox cannot be established here ({exc}), so no "
                                "checked code ran; --verify-unsandboxed runs it anyway, for code you trust")}
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
        for left in (worker, spare):
            if left is not None:
                left.stop()


def describe_sandbox(unsandboxed: bool = False) -> tuple[bool, str]:
    """(established, text) for --show-sandbox: starts a worker the way --verify does."""
    if not sys.platform.startswith("linux") and not unsandboxed:
        return False, f"--verify sandbox: none on {sys.platform}; --verify skips every finding here"
    worker = ProbeWorker(60.0, limit_memory=True, unsandboxed=unsandboxed)
    try:
        worker.start()
    except SandboxRefused as exc:
        return False, f"--verify sandbox: cannot be established here ({exc}); --verify skips every finding"
    except RuntimeError as exc:
        return False, f"--verify sandbox: the worker did not start ({exc})"
    finally:
        worker.stop()
    return True, "--verify sandbox layers:\n" + "\n".join(f"  {layer}" for layer in worker.layers)


def _runtime_version(worker: Optional[ProbeWorker], fallback: str) -> str:
    return str(worker.info.get("torch", fallback)) if worker is not None and worker.info else fallback


def summarize(runs: list[dict[str, str]]) -> str:
    verdicts = [r["verdict"] for r in runs]
    for verdict in ("confirmed", "demonstrated", "error", "not-reproduced", "not-applicable", "skipped"):
        if verdict in verdicts:
            return verdict
    return "skipped"
