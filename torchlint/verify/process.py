"""The sandboxed worker process of `--verify`, seen from torchlint: start it through the
launcher, read its answers as validated frames, watch the memory of every process of the
sandbox, enforce timeouts with SIGKILL and reap everything when a file is done.

The sandbox itself is set up on the other side (_launch.py, sandbox.py); SECURITY.md
describes the layers."""

from __future__ import annotations

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

from torchlint.records import NOTHING, PROBE, VERIFY_VERDICTS, YOUR_CODE, Verdict
from torchlint.verify._frames import MAX_FRAME
from torchlint.verify._tree import chown_all
from torchlint.verify._tree import remove as remove_tree
from torchlint.verify.bounds import INODE_LIMIT, over_disk, resident, tree_usage, kill_sandbox
from torchlint.verify.sandbox import make_parent_undumpable, policy

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional

WORKER = Path(__file__).resolve().parent / "_worker.py"
LAUNCHER = Path(__file__).resolve().parent / "_launch.py"
_ENV_KEEP = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "SYSTEMROOT", "CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH",
             "CUDA_HOME", "NVIDIA_VISIBLE_DEVICES", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
STARTUP_TIMEOUT = 180.0
CPU_ADDRESS_SPACE = 16 * 1024**3
DEFAULT_MEMORY = 2 * 1024**3
DEFAULT_BUDGET = 900.0
VERDICTS = VERIFY_VERDICTS
# What the worker says ran, as a verdict's source: the user's code (a slice of the file, or
# its module imported from the project), the rule's generic probe, or nothing.
_SOURCES = {"slice": YOUR_CODE, "import": YOUR_CODE, "probe": PROBE, "none": NOTHING}
_WATCH_MARGIN = 64 * 2**20  # what a fast allocation can add between two 10 ms polls
# RLIMIT_FSIZE bounds one file, not how many: the watchdog bounds the temp dir's disk use.
DISK_LIMIT = 1024**3
LOG_TAIL = 4096  # what torchlint reads of the worker's log, which may be 1 GiB
# Tasks (threads) of the sandbox: the launcher and RLIMIT_NPROC's 64 of a fresh uid.
TASK_LIMIT = 65
_DISK_EVERY = 25  # memory polls between two disk checks (about 0.25 s)


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
    """One sandboxed worker (behind its launcher): a fork server that imports torch once and
    answers each file's requests from a process of its own (`next_file` ends one). Restarted
    after a timeout or memory kill. Its answers arrive as length-prefixed frames on a pipe
    of its own and are validated here; its stdout and stderr go to a log file."""

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
        self.file_layers: list[str] = []
        self._file_open = False
        self.uid: Optional[int] = None
        self._buffer = b""
        self._eof = False
        self._channel: Optional[int] = None
        self._tmp: Optional[tempfile.TemporaryDirectory] = None
        self._stderr: Optional[Any] = None
        self._next_id = 0
        self._killed_for_memory = 0
        self._killed_for_disk = 0
        self._killed_for_tasks = 0
        self._killed_for_inodes = 0
        self._killed_for_watchdog = False
        self._malformed = False
        self.disk_limit = DISK_LIMIT
        self._watch_stop = threading.Event()
        self._watcher: Optional[threading.Thread] = None

    def _env(self, home: str) -> dict[str, str]:
        env = {k: os.environ[k] for k in _ENV_KEEP if k in os.environ}
        # OpenBLAS would start a thread when numpy is imported: the fork server forks, so
        # it must have none.
        env.update(HOME=home, TMPDIR=home, PYTHONDONTWRITEBYTECODE="1", PYTHONUNBUFFERED="1",
                   OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "2"), OPENBLAS_NUM_THREADS="1")
        return env

    def start(self) -> dict[str, Any]:
        self.launch()
        return self.handshake()

    def _spawn(self) -> int:
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
        except OSError:
            os.close(read_end)
            raise
        finally:
            os.close(write_end)
        return read_end

    def launch(self) -> None:
        """Start the launcher and return at once: torch imports meanwhile (see handshake).
        Raises RuntimeError, with nothing left behind, when that fails (no file descriptors
        left, a full disk)."""
        make_parent_undumpable()
        try:
            read_end = self._spawn()
        except OSError as exc:
            self.stop()
            raise RuntimeError(f"the probe worker could not be started: {exc.strerror or exc}") from None
        self._channel = read_end
        self._buffer = b""
        self._eof = False
        self._killed_for_memory = 0
        self._killed_for_disk = 0
        self._killed_for_tasks = 0
        self._killed_for_inodes = 0
        self._killed_for_watchdog = False
        self._malformed = False
        self._watch_stop = threading.Event()
        if sys.platform.startswith("linux") and self.memory_limit:
            self._watcher = threading.Thread(target=self._watch, args=(self.proc, self._watch_stop), daemon=True)
            self._watcher.start()

    def handshake(self) -> dict[str, Any]:
        """The launcher's trusted frame (the layers, or why it refused), then the worker's hello."""
        self.layers = self._layers_frame("sandbox", "starting the probe worker", 32)
        self.uid = next((int(x[4:]) for x in self.layers if x.startswith("uid ") and x[4:].isdigit()), None)
        hello = self._read_frame(STARTUP_TIMEOUT)
        if hello is None or hello.get("kind") != "hello":
            reason = self._failure("starting the probe worker")
            self.stop()
            raise RuntimeError(reason)
        self.info = {"torch": clean_text(str(hello.get("torch")), 40), "cuda": hello.get("cuda") is True}
        return self.info

    def _watch(self, proc: subprocess.Popen, done: threading.Event) -> None:
        """The bounds, polled. Whatever goes wrong in here stops the sandbox: a watchdog that
        died would leave the worker unbounded."""
        try:
            self._poll_bounds(proc, done)
        except BaseException:  # noqa: BLE001 - fail closed
            self._killed_for_watchdog = True
            kill_sandbox(proc.pid, self.uid)

    def _poll_bounds(self, proc: subprocess.Popen, done: threading.Event) -> None:
        page = os.sysconf("SC_PAGE_SIZE")
        assert self._tmp is not None
        tmp = self._tmp.name
        start, polls = os.statvfs(tmp), 0
        baseline = self._own_resident(page)
        while not done.wait(0.01):
            polls += 1
            if polls % _DISK_EVERY == 0:
                disk, entries = over_disk(tmp, start, self.disk_limit)
                if disk or entries:
                    self._killed_for_disk = disk or 1
                    self._killed_for_inodes = entries
                    kill_sandbox(proc.pid, self.uid)
                    return
            used, tasks = tree_usage(proc.pid, self.uid)
            if tasks > TASK_LIMIT:  # RLIMIT_NPROC does not bind uid 0 (root without capabilities)
                self._killed_for_tasks = tasks
                kill_sandbox(proc.pid, self.uid)
                return
            # What torchlint grew by since the launch counts too (frames the worker sent),
            # but not what it held before: that is the caller's, and varies with it.
            grown = max(0, self._own_resident(page) - baseline)
            if used + grown + _WATCH_MARGIN > self.memory_limit:
                self._killed_for_memory = used + grown
                kill_sandbox(proc.pid, self.uid)
                return

    @staticmethod
    def _own_resident(page: int) -> int:
        try:
            return resident("self", page)
        except (OSError, ValueError, IndexError):
            return 0

    def _read_frame(self, timeout: float) -> Optional[dict[str, Any]]:
        """The next frame as a dict, or None (timeout, end of stream, or anything malformed:
        the worker is then treated as broken)."""
        assert self._channel is not None
        deadline = time.monotonic() + timeout
        while True:
            if len(self._buffer) >= 4:
                size = int.from_bytes(self._buffer[:4], "big")
                if size > MAX_FRAME:
                    self._malformed = True
                    return None
                if len(self._buffer) >= 4 + size:
                    data, self._buffer = self._buffer[4:4 + size], self._buffer[4 + size:]
                    try:
                        frame = json.loads(data.decode("utf-8"))
                    except (ValueError, UnicodeDecodeError, RecursionError):
                        self._malformed = True
                        return None
                    self._malformed = type(frame) is not dict
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
            return (f"{what} was stopped: its processes held "
                    f"{self._killed_for_memory / 2**20:.0f} MiB, at the --verify-memory limit of "
                    f"{self.memory_limit / 2**20:.0f} MiB")
        if self._malformed:
            return f"{what}: the probe worker sent a malformed frame"
        if self._killed_for_tasks:
            return (f"{what} was stopped: its processes ran {self._killed_for_tasks} threads, over the limit of "
                    f"{TASK_LIMIT}")
        if self._killed_for_inodes:
            return (f"{what} was stopped: its temp dir held {self._killed_for_inodes} files and directories, over "
                    f"the limit of {INODE_LIMIT}")
        if self._killed_for_disk:
            return (f"{what} was stopped: its temp dir held {self._killed_for_disk / 2**20:.0f} MiB, over the "
                    f"limit of {self.disk_limit / 2**20:.0f} MiB")
        if self._killed_for_watchdog:
            return f"{what} was stopped: the watchdog of its bounds failed, so the sandbox was stopped with it"
        code = self.proc.poll()
        if code is None:
            return f"{what} timed out after {timeout if timeout is not None else self.timeout:g}s"
        if code < 0:
            return f"{what}: the probe process was killed by signal {signal.Signals(-code).name}"
        return f"{what}: the probe process exited with status {code}{self._log_tail()}"

    def _log_tail(self) -> str:
        try:
            assert self._stderr is not None
            self._stderr.flush()
            # Only its tail (the worker chose the size), and without blocking on a lease.
            fd = os.open(self._stderr.name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
            with os.fdopen(fd, "rb") as fh:
                fh.seek(max(0, os.fstat(fh.fileno()).st_size - LOG_TAIL))
                text = fh.read(LOG_TAIL).decode("utf-8", "replace").strip().splitlines()
            return f": {clean_text(text[-1], 200)}" if text else ""
        except OSError:
            return ""

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        try:
            self.proc.stdin.write((json.dumps(message) + "\n").encode())
            self.proc.stdin.flush()
        except OSError:
            pass  # it died: the read that follows says how

    def open_file(self) -> None:
        """Ask the fork server for the current file's own process; its first frame names the
        layers it added (sent before any of the file's code ran there) or why it refused."""
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        self._send({"kind": "open"})
        self.file_layers = self._layers_frame("ready", "starting the file's probe process", 8)
        self._file_open = True

    def _layers_frame(self, kind: str, what: str, most: int) -> list[str]:
        """A trusted frame, sent before any checked code ran on that side: `kind` with the
        layers in place, or `refused` with the reason (SandboxRefused); anything else is a
        worker that did not start (RuntimeError). Either way the worker is stopped."""
        frame = self._read_frame(STARTUP_TIMEOUT)
        if frame is not None and frame.get("kind") == "refused" and type(frame.get("reason")) is str:
            reason = clean_text(frame["reason"], 500)
            self.stop()
            raise SandboxRefused(reason)
        layers = frame.get("layers") if frame is not None and frame.get("kind") == kind else None
        if type(layers) is not list or not all(type(x) is str for x in layers):
            reason = self._failure(what)
            self.stop()
            raise RuntimeError(reason)
        return [clean_text(x, 200) for x in layers[:most]]

    def next_file(self) -> None:
        """End the current file: the server kills every process it left and removes what it
        wrote, so nothing of it reaches the next file's process. A server that does not
        confirm that is stopped."""
        if not self._file_open or self.proc is None:
            return
        self._file_open = False
        self._send({"kind": "close"})
        closed = self._read_frame(60.0)
        if closed is None or closed.get("kind") != "closed":
            self.stop()
        elif closed.get("exiting") is True:  # no fork here: the worker ends with its file
            self.stop()

    @property
    def all_layers(self) -> list[str]:
        return self.layers + self.file_layers

    def _exchange(self, request: dict[str, Any], timeout: Optional[float], what: str) -> "dict[str, Any] | str":
        """Send one request and read its answer frame; or why there is none."""
        if not self._file_open:
            self.open_file()
        self._next_id += 1
        self._send(dict(request, id=self._next_id))
        # The parent enforces the time: a worker that ignores SIGALRM is killed all the same.
        limit = min(self.timeout, timeout) if timeout is not None else self.timeout
        answer = self._read_frame(limit)
        if answer is None:
            failure = self._failure(what, limit)
            self.stop()
            return failure
        if answer.get("kind") in ("died", "malformed"):
            self._file_open = False  # the server has reaped it; the next request gets a fresh one
            return self._file_failure(answer)
        return answer

    def run(self, request: dict[str, Any], timeout: Optional[float] = None) -> Verdict:
        answer = self._exchange(request, timeout, "the probe")
        if isinstance(answer, str):
            return Verdict("error", answer)
        verdict, evidence, source = answer.get("verdict"), answer.get("evidence"), answer.get("source")
        if set(answer) != {"kind", "id", "verdict", "evidence", "source"} or answer["kind"] != "answer" \
                or answer["id"] != self._next_id or type(answer["id"]) is not int \
                or type(verdict) is not str or verdict not in VERDICTS or type(evidence) is not str \
                or type(source) is not str or source not in _SOURCES:
            self.next_file()  # what sent that cannot be trusted with the next request
            return Verdict("error", "the probe worker sent a malformed answer")
        return Verdict(verdict, clean_text(evidence), _SOURCES[source])

    def run_program(self, request: dict[str, Any], timeout: Optional[float] = None) -> "list[Verdict | str] | str":
        """One run of a file's program for several findings (verify/program.py): per member,
        its Verdict or why it fell short; or, for the whole run, why it failed."""
        answer = self._exchange(request, timeout, "the program")
        if isinstance(answer, str):
            return answer
        results = answer.get("results")
        members = len(request["import"]["members"])
        out: list[Verdict | str] = []
        if set(answer) == {"kind", "id", "results"} and answer["kind"] == "program" and answer["id"] == self._next_id \
                and type(answer["id"]) is int and type(results) is list and len(results) == members:
            for got in results:
                if type(got) is dict and set(got) == {"why"} and type(got["why"]) is str:
                    out.append(clean_text(got["why"], 500))
                elif type(got) is dict and set(got) == {"verdict", "evidence"} and type(got["verdict"]) is str \
                        and got["verdict"] in VERDICTS and type(got["evidence"]) is str:
                    out.append(Verdict(got["verdict"], clean_text(got["evidence"]), YOUR_CODE))
        if len(out) != members:
            self.next_file()
            return "the probe worker sent a malformed answer"
        return out

    def _file_failure(self, frame: dict[str, Any]) -> str:
        if frame.get("kind") == "malformed":
            self.next_file()
            return "the probe: the probe worker sent a malformed frame"
        sig, status = frame.get("signal"), frame.get("status")
        if type(sig) is int and sig > 0:
            try:
                name = signal.Signals(sig).name
            except ValueError:
                name = str(sig)
            return f"the probe: the probe process was killed by signal {name}"
        tail = frame.get("tail")
        tail = f": {clean_text(tail, 200)}" if type(tail) is str and tail else ""
        return f"the probe: the probe process exited with status {status if type(status) is int else '?'}{tail}"

    def finish(self) -> None:
        """The run is over: end the file, let the server and its launcher exit on their own
        (so every process of the sandbox is reaped by its parent), then stop what is left."""
        self.next_file()
        if self.proc is not None and self.proc.poll() is None and self.proc.stdin is not None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.stop()

    def stop(self) -> None:
        self._watch_stop.set()
        self._file_open = False
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
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
        if self._tmp is not None:
            _remove(self._tmp)
            self._tmp = None


def _remove(tmp: tempfile.TemporaryDirectory) -> None:
    """Delete the temp dir, however deep the worker made it, even when torchlint has run out
    of file descriptors (raise the soft limit to the hard one and try again); if even that
    fails, say so instead of a traceback."""
    for attempt in range(2):
        try:
            if os.getuid() == 0:  # the worker's uid owned the files it wrote: take them back
                chown_all(tmp.name, 0, 0)
            remove_tree(tmp.name)
            finalizer = getattr(tmp, "_finalizer", None)
            if finalizer is not None:
                finalizer.detach()  # removed already: nothing for its cleanup at exit
            return
        except OSError as exc:
            if attempt == 0 and os.name == "posix":
                import resource
                try:
                    resource.setrlimit(resource.RLIMIT_NOFILE, (resource.getrlimit(resource.RLIMIT_NOFILE)[1],) * 2)
                except (OSError, ValueError):
                    pass
                continue
            sys.stderr.write(f"torchlint: could not remove the --verify temp dir {tmp.name}: {exc.strerror or exc}\n")
