"""Attacks on the `--verify` sandbox with the allow-list pre-filter switched off.

Each attack goes to the worker as a program slice built here, so the parent's safety check
never sees it: what stops it is the OS sandbox alone (sandbox.py, _launch.py, runner.py).
The attack code recovers the real `__import__` through torch, as the bypasses of issue 16
did. Every attack runs with namespaces and in a simulated kernel without them (as on
GitHub's Ubuntu 24.04 runners), as this user and, when the suite runs as root, again as an
unprivileged uid (setpriv) in a child process. Run as a script, this file is that child:
`python tests/test_sandbox.py SPEC_JSON` prints the attacks' results as JSON."""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")

from torchlint.verify import _landlock, runner  # noqa: E402
from torchlint.verify.runner import ProbeWorker, SandboxRefused  # noqa: E402

pytestmark = [pytest.mark.torch,
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox is Linux-only")]
# Where the kernel has no Landlock, --verify refuses to run (the fail-closed tests show it),
# so there is no sandbox to attack.
needs_sandbox = pytest.mark.skipif(not sys.platform.startswith("linux") or _landlock.abi_version() == 0,
                                   reason="no Landlock in this kernel")

PRELUDE = """
_b = _tl_torch.__builtins__
_imp = _b["__import__"] if isinstance(_b, dict) else _b.__import__
__builtins__.update(_imp("builtins").__dict__)  # the slice's restricted builtins, made whole
os = _imp("os")
socket = _imp("socket")
ctypes = _imp("ctypes")
time = _imp("time")
def _name(n):
    ctypes.CDLL(None).prctl(15, n.encode(), 0, 0, 0)  # PR_SET_NAME: what the test looks for
def _try(fn):
    try:
        out = fn()
        return "A" if out is None or out is True or out else "D"
    except BaseException:
        return "D"
def _report(s):
    raise RuntimeError("RESULT[" + s + "]")
"""

# One request probes every file, exec and network property; A = allowed, D = denied.
ESCAPE = PRELUDE + """
spec = {spec}
def _read(p):
    with open(p, "rb") as fh:
        return fh.read(4096)
def _write(p):
    with open(p, "w") as fh:
        fh.write("pwned")
def _environ():
    return spec["secret"].encode() in _read("/proc/%d/environ" % spec["parent"])
def _spawn(argv):
    import subprocess
    return subprocess.run(argv, capture_output=True, timeout=60).returncode == 0
def _tcp():
    with socket.create_connection(("127.0.0.1", spec["port"]), timeout=2) as s:
        s.sendall(b"exfiltrated")
def _unix(address):
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(2)
        s.connect(address)
        s.sendall(b"exfiltrated")
r = []
r.append("environ:" + _try(_environ))
r.append("ownenv:" + ("A" if spec["secret"] in str(os.environ) else "D"))
r.append("home:" + _try(lambda: _read(spec["home"] + "/.netrc")))
r.append("outside:" + _try(lambda: _read(spec["outside"] + "/secret.txt")))
r.append("git:" + _try(lambda: _read(spec["project"] + "/.git/config")))
r.append("project:" + _try(lambda: _read(spec["project"] + "/model.py")))
r.append("tmpw:" + _try(lambda: _write(os.environ["TMPDIR"] + "/ok.txt")))
# dill (imported by torch when installed) opens /dev/null O_RDWR and O_WRONLY|O_TRUNC at import.
r.append("devnull:" + _try(lambda: _write("/dev/null") or open("/dev/null", "r+b").close()))
r.append("outw:" + _try(lambda: _write(spec["writable"] + "/pwned.txt")))
r.append("treew:" + _try(lambda: _write(spec["project"] + "/pwned.py")))
r.append("venvw:" + _try(lambda: _write(spec["site"] + "/tl_sandbox_evil.pth")))
r.append("sh:" + _try(lambda: _spawn(["/bin/sh", "-c", "true"])))
r.append("python:" + _try(lambda: _spawn([_imp("sys").executable, "-c", "pass"])))
r.append("tcp:" + _try(_tcp))
r.append("unix:" + _try(lambda: _unix(spec["unix"])))
r.append("abstract:" + _try(lambda: _unix(spec["abstract"])))
_report(" ".join(r))
"""

DAEMON = PRELUDE + """
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        _name({marker!r})
        time.sleep(120)
    os._exit(0)
time.sleep(0.5)
_report("daemon started")
"""

FORGED = PRELUDE + """
import_struct = _imp("struct")
for fd in (1, 2):
    os.write(fd, b"\\n::warning::forged by the checked code\\n")
for fake_id in range(1, 6):
    data = ('{{"kind": "answer", "id": %d, "verdict": "not-reproduced", "evidence": "::error::merge me", '
            '"source": "probe"}}' % (fake_id + 1)).encode()
    os.write(3, import_struct.pack(">I", len(data)) + data)
_report("::error title=x::forged\\n::warning::second line\\x1b[2J")
"""

FORK_BOMB = PRELUDE + """
_name({marker!r})
end = time.time() + 20
while time.time() < end:
    try:
        os.fork()
    except OSError:
        time.sleep(0.01)
"""

MEMORY_BOMB = PRELUDE + """
if os.fork() == 0:
    os.setsid()  # out of the process group that torchlint used to watch
    _name({marker!r})
    hog = []
    for _ in range(48):
        hog.append(b"x" * (64 << 20))  # 3 GiB in all, touched
    time.sleep(120)
    os._exit(0)
time.sleep(60)
"""

IGNORE_ALARM = PRELUDE + """
signal = _imp("signal")
signal.signal(signal.SIGALRM, signal.SIG_IGN)
signal.setitimer = lambda *a: None
_name({marker!r})
while True:
    pass
"""

# chmod/utime/xattr/chown/mknod, which Landlock does not govern: as uid 0 without capabilities
# the worker set u+s on a root-owned copy of bash (a host root escalation); as any uid, on
# that uid's files. The victim belongs to the uid the worker runs as.
METADATA = PRELUDE + """
spec = {spec}
f = spec["victim"]
r = []
r.append("suid:" + _try(lambda: os.chmod(f, 0o4755)))
r.append("dir777:" + _try(lambda: os.chmod(spec["victim_dir"], 0o777)))
r.append("utime:" + _try(lambda: os.utime(f, (0, 0))))
r.append("xattr:" + _try(lambda: os.setxattr(f, "user.pwned", b"1")))
r.append("rmxattr:" + _try(lambda: os.removexattr(f, "user.kept")))
r.append("chown:" + _try(lambda: os.chown(f, os.getuid(), os.getgid())))
r.append("mknod:" + _try(lambda: os.mkfifo(os.environ["TMPDIR"] + "/fifo")))
_report(" ".join(r))
"""

# memfd: memory the RSS watchdog does not see, and (with execveat) an ELF that never touched
# the disk. execveat is tried on the interpreter itself, which the worker may execute.
MEMFD = PRELUDE + """
sys = _imp("sys")
libc = ctypes.CDLL(None, use_errno=True)
nr = {{"x86_64": (322, 447), "aarch64": (281, 447)}}[os.uname().machine]
def _execveat():
    fd = os.open(sys.executable, os.O_RDONLY)
    pid = os.fork()
    if pid == 0:
        argv = (ctypes.c_char_p * 4)(b"python", b"-c", b"raise SystemExit(42)", None)
        libc.syscall(nr[0], fd, b"", argv, None, 0x1000)  # AT_EMPTY_PATH
        os._exit(3)
    return os.WEXITSTATUS(os.waitpid(pid, 0)[1]) == 42
r = ["memfd:" + _try(lambda: os.memfd_create("m")), "execveat:" + _try(_execveat),
     "secret:" + _try(lambda: libc.syscall(nr[1], 0) >= 0)]
_report(" ".join(r))
"""

# SysV IPC lives in the host's IPC namespace without namespaces: segments outlived
# torchlint and a later file's worker read them.
SYSV = PRELUDE + """
libc = ctypes.CDLL(None, use_errno=True)
key = 0x746C5500
r = ["shm:" + _try(lambda: libc.shmget(key, 1 << 20, 0o1666) >= 0),
     "msg:" + _try(lambda: libc.msgget(key, 0o1666) >= 0),
     "sem:" + _try(lambda: libc.semget(key, 1, 0o1666) >= 0)]
_report(" ".join(r))
"""

# prlimit64 on torchlint itself (RLIMIT_CPU 1 s killed it), setpriority and sched_setaffinity
# of another process. Each call sets the parent's current value again, so nothing changes
# when it succeeds; the same calls on the worker itself must keep working.
SELF_ONLY = PRELUDE + """
spec = {spec}
resource = _imp("resource")
P = spec["parent"]
def _prlimit(pid):
    resource.prlimit(pid, resource.RLIMIT_CORE, resource.prlimit(pid, resource.RLIMIT_CORE))
def _nice(pid):
    os.setpriority(os.PRIO_PROCESS, pid, os.getpriority(os.PRIO_PROCESS, pid))
def _affinity(pid):
    os.sched_setaffinity(pid, os.sched_getaffinity(pid))
r = ["prlimit:" + _try(lambda: _prlimit(P)), "nice:" + _try(lambda: _nice(P)),
     "affinity:" + _try(lambda: _affinity(P)), "niceuser:" + _try(lambda: os.setpriority(os.PRIO_USER, 0, 0)),
     "ownprlimit:" + _try(lambda: _prlimit(0)), "ownnice:" + _try(lambda: _nice(0)),
     "ownaffinity:" + _try(lambda: _affinity(0)),
     "setrlimit:" + _try(lambda: resource.setrlimit(resource.RLIMIT_CORE, (0, 0)))]
_report(" ".join(r))
"""

# RLIMIT_FSIZE bounds one file, not their number: the attacker filled 3 GiB into the temp dir.
DISK_FILL = PRELUDE + """
chunk = b"x" * (16 << 20)
for i in range(64):
    with open(os.environ["TMPDIR"] + "/fill%d" % i, "wb") as fh:
        fh.write(chunk)
_report("wrote 1 GiB")
"""

# RLIMIT_NPROC is not enforced for uid 0 (root without capabilities): 1000 threads ran, and
# they share one RSS, so the memory watchdog did not stop them either.
THREAD_BOMB = PRELUDE + """
threading = _imp("threading")
threading.stack_size(64 << 10)
ev = threading.Event()
n = 0
try:
    for n in range(1, 401):
        threading.Thread(target=ev.wait, daemon=True).start()
except Exception:
    n -= 1
time.sleep(2)
_report("started %d" % n)
"""

# The worker fills its log and exits: torchlint used to read and split the whole log (2.6 GiB
# of its own memory for 512 MiB of "a\\n").
LOG_BOMB = PRELUDE + """
block = b"a\\n" * (1 << 19)
for _ in range(256):
    os.write(2, block)
os.write(2, b"last line\\n")
os._exit(1)
"""

# Top-level symlinks committed in the project (runner API project=): each grant followed
# its link, so `g -> .git` exposed .git/config, `h -> ../home` the .netrc, `rootfs -> /` all.
PROJECT_LINKS = PRELUDE + """
spec = {spec}
def _read(p):
    with open(p, "rb") as fh:
        return fh.read(4096)
P = spec["project"]
r = ["g:" + _try(lambda: _read(P + "/g/config")), "git:" + _try(lambda: _read(P + "/.git/config")),
     "h:" + _try(lambda: _read(P + "/h/.netrc")), "rootfs:" + _try(lambda: _read(P + "/rootfs" + spec["outside"] +
                                                                                   "/secret.txt")),
     "passwd:" + _try(lambda: _read(P + "/rootfs/etc/hostname")),
     "inside:" + _try(lambda: _read(P + "/pkg/model.py")), "model:" + _try(lambda: _read(P + "/model.py"))]
_report(" ".join(r))
"""

# A frame nested too deeply for json (RecursionError) was reported as "timed out after 20s".
DEEP_FRAME = PRELUDE + """
data = b"[" * 30000 + b"]" * 30000
os.write(3, _imp("struct").pack(">I", len(data)) + data)
time.sleep(30)
"""

ATTACKS = {"escape": ESCAPE, "deepframe": DEEP_FRAME, "projectlinks": PROJECT_LINKS, "diskfill": DISK_FILL, "logbomb": LOG_BOMB, "threadbomb": THREAD_BOMB, "metadata": METADATA, "memfd": MEMFD, "sysv": SYSV, "selfonly": SELF_ONLY, "daemon": DAEMON, "forged": FORGED, "forkbomb": FORK_BOMB, "memorybomb": MEMORY_BOMB,
           "alarm": IGNORE_ALARM}


def run_attack(name: str, namespaces: bool, spec: dict[str, Any]) -> dict[str, Any]:
    """One attack in a fresh sandboxed worker; the verdict, its evidence and the layers."""
    code = ATTACKS[name].format(spec=json.dumps(spec), marker=spec.get("marker", ""))
    worker = ProbeWorker(timeout=spec.get("timeout", 60), limit_memory=True, memory_limit=spec.get("memory", 2 << 30),
                         project=spec.get("project", ""), namespaces=namespaces)
    worker.disk_limit = spec.get("disk", worker.disk_limit)
    started = time.monotonic()
    out = run_attack_code(code, namespaces, worker)
    return {**out, "layers": worker.layers, "seconds": time.monotonic() - started}


def run_attack_code(code: str, namespaces: bool, worker: Any = None) -> dict[str, Any]:
    """`code` as the slice of one request to a fresh worker; the verdict and its RESULT[...]."""
    worker = worker or ProbeWorker(timeout=120, limit_memory=True, namespaces=namespaces)
    try:
        worker.start()
        result = worker.run({"code": "TL101", "facts": {}, "device": "cpu", "slice_seconds": 0,
                             "slice": {"variants": [code], "stop": "flag"}})
    finally:
        worker.stop()
    found = re.search(r"RESULT\[(.*?)\]", result["evidence"])
    return {**result.to_json(), "result": found.group(1) if found else None}


# -- who runs the attack -------------------------------------------------------------------

def _unprivileged_command(argv: list[str]) -> list[str]:
    """argv as uid/gid 65534. An interpreter, venv or checkout under a directory that other
    users cannot enter (pyenv in /root, a venv in a 0700 `mktemp -d`) is made reachable the
    way the sandbox does it: in a private mount namespace, a tmpfs over each closed directory
    with the entries we need bound back in."""
    needed = [os.path.realpath(p) for p in (sys.base_prefix, sys.prefix, Path(__file__).resolve().parents[1])]
    keep: dict[str, set[str]] = {}  # closed directory -> the entries below it to bind back
    for path in needed:
        cur = "/"
        for part in path.strip("/").split("/"):
            nxt = os.path.join(cur, part)
            if not os.stat(cur).st_mode & 0o001:
                keep.setdefault(cur, set()).add(nxt)
                break
            cur = nxt
    shell = []
    for closed in sorted(keep, key=len):
        entries = sorted(keep[closed])
        stashes = [tempfile.mkdtemp(prefix="tl-stash-") for _ in entries]
        shell += [f"mount --bind {_quote(e)} {s}" for e, s in zip(entries, stashes)]
        shell.append(f"mount -t tmpfs -o mode=755 tmpfs {_quote(closed)}")
        for entry, stash in zip(entries, stashes):
            make = "mkdir -p" if os.path.isdir(stash) else "touch"
            shell += [f"{make} {_quote(entry)}", f"mount --bind {stash} {_quote(entry)}"]
    setpriv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
               "--bounding-set=-all"]
    script = " && ".join(shell + ["exec " + " ".join(_quote(a) for a in setpriv + argv)])
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script]


def _quote(arg: str) -> str:
    return "'" + arg.replace("'", "'\\''") + "'"


USERS = ["self"] + (["unprivileged"] if os.geteuid() == 0 and shutil.which("setpriv") and shutil.which("unshare")
                    else [])
MODES = [pytest.param(user, ns, id=f"{user}-{'namespaces' if ns else 'no-namespaces'}")
         for user in USERS for ns in (True, False)]


def attack(name: str, user: str, namespaces: bool, spec: dict[str, Any]) -> dict[str, Any]:
    if user == "self":
        return run_attack(name, namespaces, dict(spec, parent=os.getpid()))
    argv = [sys.executable, "-I", str(Path(__file__).resolve()), json.dumps([name, namespaces, spec])]
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    proc = subprocess.run(_unprivileged_command(argv), capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _processes_named(marker: str) -> list[int]:
    """Live processes with that name; a zombie (killed, not yet reaped by whoever inherited
    it) runs nothing."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and Path(f"/proc/{entry}/comm").read_text().strip() == marker[:15] \
                    and Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X"):
                found.append(int(entry))
        except (OSError, IndexError):
            pass
    return found


def _left_alive(marker: str, within: float = 10.0) -> list[int]:
    """The processes with that name still alive after `within` seconds: a killed process
    frees its memory before it leaves the table (seconds, for gigabytes on a loaded host),
    while one that was never killed sleeps far longer than this."""
    deadline = time.monotonic() + within
    while (alive := _processes_named(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive


# -- the attacks ---------------------------------------------------------------------------

@pytest.fixture
def world(tmp_path_factory, monkeypatch):
    """Secrets and targets the attack tries to reach, readable and writable for every uid
    (so only the sandbox, not file modes, stands in the way), and two listeners."""
    base = Path(tempfile.mkdtemp(prefix="tl-world-"))
    secret = "tl-secret-" + secrets.token_hex(8)
    monkeypatch.setenv("GITHUB_TOKEN", secret)
    home, outside, writable, project, sock = (base / n for n in ("home", "outside", "writable", "project", "sock"))
    for d in (home, outside, project, project / ".git", sock):
        d.mkdir()
        d.chmod(0o755)
    writable.mkdir()
    writable.chmod(0o777)
    project.chmod(0o777)
    for path, text in ((home / ".netrc", f"machine github.com password {secret}"), (outside / "secret.txt", secret),
                       (project / ".git" / "config", f"extraheader = AUTHORIZATION: basic {secret}"),
                       (project / "model.py", "import torch\n")):
        path.write_text(text)
        path.chmod(0o644)
    base.chmod(0o755)
    monkeypatch.setenv("HOME", str(home))
    tcp = socket.socket()
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(8)
    unix = socket.socket(socket.AF_UNIX)
    unix.bind(str(sock / "agent.sock"))
    os.chmod(sock / "agent.sock", 0o777)
    unix.listen(8)
    abstract_name = "\0tl-sandbox-" + secrets.token_hex(6)
    abstract = socket.socket(socket.AF_UNIX)
    abstract.bind(abstract_name)
    abstract.listen(8)
    received: list[str] = []

    def accept(server: socket.socket, what: str) -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
                received.append(what)
                conn.close()
            except OSError:
                continue

    stop = threading.Event()
    threads = [threading.Thread(target=accept, args=(s, w), daemon=True)
               for s, w in ((tcp, "tcp"), (unix, "unix"), (abstract, "abstract"))]
    for t in threads:
        t.start()
    site = sysconfig.get_paths()["purelib"]
    spec = {"secret": secret, "home": str(home), "outside": str(outside), "writable": str(writable),
            "project": str(project), "site": site, "port": tcp.getsockname()[1], "unix": str(sock / "agent.sock"),
            "abstract": abstract_name}
    yield spec, received
    stop.set()
    for t in threads:
        t.join()
    for s in (tcp, unix, abstract):
        s.close()
    evil = Path(site) / "tl_sandbox_evil.pth"
    assert not evil.exists(), "the attack planted a .pth in the venv"
    shutil.rmtree(base)


@needs_sandbox
@pytest.mark.parametrize("user, namespaces", MODES)
def test_files_processes_and_network_are_out_of_reach(world, user, namespaces):
    spec, received = world
    out = attack("escape", user, namespaces, spec)
    assert out["result"], out
    got = dict(item.split(":") for item in out["result"].split())
    # What the worker legitimately needs still works: the sandbox is not merely broken.
    assert got["project"] == "A" and got["tmpw"] == "A" and got["python"] == "A" and got["devnull"] == "A", out
    denied = ("environ", "ownenv", "home", "outside", "git", "outw", "treew", "venvw", "sh", "tcp", "unix", "abstract")
    assert {k: got[k] for k in denied} == dict.fromkeys(denied, "D"), out
    assert spec["secret"] not in json.dumps(out)
    assert received == [], received
    base = Path(spec["project"])
    assert not (base / "pwned.py").exists() and not (Path(spec["writable"]) / "pwned.txt").exists()
    assert any(layer.startswith("landlock") for layer in out["layers"]), out["layers"]
    assert any(layer.startswith("seccomp") for layer in out["layers"]), out["layers"]
    if os.geteuid() == 0 and user == "self":
        assert any(layer.startswith(("uid ", "root without capabilities")) for layer in out["layers"]), out["layers"]


@needs_sandbox
@pytest.mark.parametrize("user, namespaces", MODES)
def test_a_daemon_does_not_outlive_the_verdict(user, namespaces):
    marker = "tl-d-" + secrets.token_hex(4)
    out = attack("daemon", user, namespaces, {"marker": marker})
    assert out["result"] == "daemon started", out
    assert _left_alive(marker) == []


@needs_sandbox
@pytest.mark.parametrize("user, namespaces", MODES)
def test_forged_output_and_frames_are_data(user, namespaces, capfd):
    out = attack("forged", user, namespaces, {})
    # A frame with an id we did not ask for: the answer is refused, the worker stopped.
    assert out["verdict"] == "error" and "malformed" in out["evidence"], out
    captured = capfd.readouterr()
    assert "::warning" not in captured.out and "::warning" not in captured.err


@needs_sandbox
@pytest.mark.parametrize("user, namespaces", MODES)
def test_fork_bomb_is_bounded_and_reaped(user, namespaces):
    marker = "tl-f-" + secrets.token_hex(4)
    out = attack("forkbomb", user, namespaces, {"marker": marker, "timeout": 8, "memory": 1 << 30})
    assert out["verdict"] == "error", out
    assert out["seconds"] < 60, out
    assert _left_alive(marker) == []


@needs_sandbox
@pytest.mark.parametrize("user, namespaces", MODES)
def test_memory_bomb_in_a_setsid_child_is_killed(user, namespaces):
    marker = "tl-m-" + secrets.token_hex(4)
    out = attack("memorybomb", user, namespaces, {"marker": marker, "timeout": 50, "memory": 1 << 30})
    assert out["verdict"] == "error" and "--verify-memory limit" in out["evidence"], out
    assert _left_alive(marker) == []


@needs_sandbox
@pytest.mark.parametrize("user, namespaces", MODES[:2])
def test_the_parent_enforces_the_timeout_when_sigalrm_is_ignored(user, namespaces):
    marker = "tl-a-" + secrets.token_hex(4)
    out = attack("alarm", user, namespaces, {"marker": marker, "timeout": 4})
    assert out["verdict"] == "error" and "timed out after 4s" in out["evidence"], out
    assert out["seconds"] < 30
    assert _left_alive(marker) == []


@needs_sandbox
@pytest.mark.parametrize("user, namespaces", MODES)
def test_filling_the_temp_dir_is_stopped(user, namespaces):
    out = attack("diskfill", user, namespaces, {"disk": 128 << 20})
    assert out["verdict"] == "error" and "temp dir held" in out["evidence"], out
    assert out["result"] is None, out


@needs_sandbox
@pytest.mark.parametrize("user, namespaces", MODES)
def test_a_thread_bomb_is_bounded(user, namespaces):
    from torchlint.verify.process import TASK_LIMIT
    out = attack("threadbomb", user, namespaces, {})
    if out["result"] is None:
        assert out["verdict"] == "error" and "threads, over the limit" in out["evidence"], out
    else:  # RLIMIT_NPROC stopped it (a fresh uid)
        assert int(out["result"].split()[1]) < TASK_LIMIT, out
    if user == "self" and not namespaces and os.geteuid() == 0:
        assert out["result"] is None, out  # uid 0: only the watchdog stands in the way


@needs_sandbox
def test_torchlint_reads_only_the_tail_of_the_workers_log():
    argv = [sys.executable, "-I", str(Path(__file__).resolve()), json.dumps(["logbomb", False, {"disk": 1 << 40}])]
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["verdict"] == "error" and out["evidence"].endswith("status 1: last line"), out
    assert out["grown_mib"] < 64, out  # 512 MiB of log once cost 2.6 GiB


@needs_sandbox
@pytest.mark.parametrize("user, namespaces", MODES)
def test_symlinks_in_the_project_grant_nothing_outside_it(world, user, namespaces):
    spec, _ = world
    project = Path(spec["project"])
    (project / "g").symlink_to(".git")
    (project / "h").symlink_to(os.path.relpath(spec["home"], project))
    (project / "rootfs").symlink_to("/")
    (project / "src").mkdir(mode=0o755)
    (project / "src" / "model.py").write_text("import torch\n")
    (project / "src" / "model.py").chmod(0o644)
    (project / "pkg").symlink_to("src")  # inside the project: still granted
    out = attack("projectlinks", user, namespaces, spec)
    got = _results(out)
    assert {k: got[k] for k in ("g", "git", "h", "rootfs", "passwd")} == dict.fromkeys(
        ("g", "git", "h", "rootfs", "passwd"), "D"), out
    assert got["model"] == "A" and got["inside"] == "A", out
    assert spec["secret"] not in json.dumps(out)


@needs_sandbox
def test_a_deeply_nested_frame_is_reported_as_malformed():
    out = attack("deepframe", "self", True, {"timeout": 20})
    assert out["verdict"] == "error" and "malformed frame" in out["evidence"], out
    assert "timed out" not in out["evidence"] and out["seconds"] < 15, out


def _results(out: dict[str, Any]) -> dict[str, str]:
    assert out["result"], out
    return dict(item.split(":", 1) for item in out["result"].split())


@pytest.fixture
def victims():
    """A file and a directory of the uid the worker runs as (uid 0 without capabilities,
    when root without namespaces; 65534 for the unprivileged runs)."""
    base = Path(tempfile.mkdtemp(prefix="tl-victim-"))
    base.chmod(0o755)
    (base / "dir").mkdir(mode=0o755)
    victim = base / "bash"
    victim.write_bytes(b"#!/bin/sh\n")
    victim.chmod(0o755)
    try:
        os.setxattr(victim, "user.kept", b"1")
    except OSError:
        pass
    yield base

    shutil.rmtree(base)


def _own(base: Path, user: str) -> None:
    if user == "unprivileged":
        for path in (base, base / "dir", base / "bash"):
            os.chown(path, 65534, 65534)


@needs_sandbox
@pytest.mark.parametrize("user, namespaces", MODES)
def test_file_metadata_cannot_be_changed(victims, user, namespaces):
    _own(victims, user)
    before = [(p.stat().st_mode, p.stat().st_mtime, p.stat().st_uid) for p in (victims / "bash", victims / "dir")]
    out = attack("metadata", user, namespaces, {"victim": str(victims / "bash"), "victim_dir": str(victims / "dir")})
    assert set(_results(out).values()) == {"D"}, out
    assert [(p.stat().st_mode, p.stat().st_mtime, p.stat().st_uid)
            for p in (victims / "bash", victims / "dir")] == before


@needs_sandbox
@pytest.mark.parametrize("user, namespaces", MODES)
def test_no_memfd_and_no_execveat(user, namespaces):
    out = attack("memfd", user, namespaces, {})
    assert _results(out) == {"memfd": "D", "execveat": "D", "secret": "D"}, out


def _sysv_keys() -> set[str]:
    keys = set()
    for name in ("shm", "msg", "sem"):
        try:
            keys.update(line.split()[0] for line in Path(f"/proc/sysvipc/{name}").read_text().splitlines()[1:])
        except OSError:
            pass
    return keys


@needs_sandbox
@pytest.mark.parametrize("user, namespaces", MODES)
def test_no_sysv_ipc_outlives_the_worker(user, namespaces):
    out = attack("sysv", user, namespaces, {})
    assert _results(out) == {"shm": "D", "msg": "D", "sem": "D"}, out
    assert str(0x746C5500) not in _sysv_keys()


@needs_sandbox
@pytest.mark.parametrize("user, namespaces", MODES)
def test_rlimits_and_priorities_only_of_the_worker_itself(user, namespaces):
    out = attack("selfonly", user, namespaces, {})
    got = _results(out)
    assert {k: got[k] for k in ("prlimit", "nice", "affinity", "niceuser")} == dict.fromkeys(
        ("prlimit", "nice", "affinity", "niceuser"), "D"), out
    assert {k: got[k] for k in ("ownprlimit", "ownnice", "ownaffinity", "setrlimit")} == dict.fromkeys(
        ("ownprlimit", "ownnice", "ownaffinity", "setrlimit"), "A"), out


# -- fail closed, per-file isolation, the parent ----------------------------------------

SOURCE = "import torch\nt = torch.FloatTensor(3)\n"


def _finding(path: str = "x.py"):
    from torchlint.diagnostics import Finding
    return Finding(code="TL205", message="m", path=path, row=2, col=5, end_row=2, end_col=25,
                   probe_params={"constructor": "torch.FloatTensor"})


@pytest.mark.parametrize("layer", ["landlock", "seccomp"])
def test_a_missing_layer_means_no_checked_code_runs(layer, tmp_path):
    with pytest.raises(SandboxRefused, match=layer.capitalize() if layer == "landlock" else layer):
        ProbeWorker(timeout=30, limit_memory=True, simulate_missing=(layer,)).start()
    finding = _finding()
    runner.verify_findings([finding], device="cpu", timeout=60, sources=lambda p: SOURCE, cache_dir=tmp_path,
                           _simulate_missing=(layer,))
    run = finding.verify["runs"][0]
    assert finding.verify["verdict"] == "skipped" and "sandbox cannot be established" in run["evidence"], run
    assert "--verify-unsandboxed" in run["evidence"]
    assert not list((tmp_path / "verify").glob("*.json")) if (tmp_path / "verify").exists() else True
    # The user's explicit choice runs it, and the verdict says so.
    trusted = _finding()
    runner.verify_findings([trusted], device="cpu", timeout=60, sources=lambda p: SOURCE, unsandboxed=True,
                           _simulate_missing=(layer,))
    assert trusted.verify["verdict"] == "confirmed", trusted.verify
    assert any("UNSANDBOXED" in x for x in trusted.verify["runs"][0]["sandbox"])


def test_a_platform_without_the_sandbox_skips_every_finding(monkeypatch):
    monkeypatch.setattr(runner.sys, "platform", "darwin")
    monkeypatch.setattr(subprocess, "Popen", None)  # nothing may even start
    finding = _finding()
    runner.verify_findings([finding], device="cpu", timeout=60, sources=lambda p: SOURCE)
    run = finding.verify["runs"][0]
    assert finding.verify["verdict"] == "skipped" and "no OS sandbox for darwin" in run["evidence"], run


def test_a_config_file_cannot_turn_the_sandbox_off(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.torchlint]\nverify-unsandboxed = true\n")
    (tmp_path / "m.py").write_text(SOURCE)
    proc = subprocess.run([sys.executable, "-m", "torchlint", "check", "m.py", "--no-cache"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "unknown key `verify-unsandboxed`" in proc.stderr, proc.stderr


@needs_sandbox
def test_show_sandbox_names_the_layers():
    proc = subprocess.run([sys.executable, "-m", "torchlint", "check", "--show-sandbox"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "landlock ABI" in proc.stdout and "seccomp" in proc.stdout, proc.stdout


@needs_sandbox
def test_escaped_code_in_one_file_cannot_touch_another_files_verdicts(monkeypatch, tmp_path, capfd):
    """File a.py's worker is taken over: it rewrites the worker's probe table so that every
    later answer says not-reproduced, plants files in its temp dir and sends frames for the
    next ids. b.py, checked afterwards, still gets its true verdict from a fresh worker."""
    poison = PRELUDE + """
sys = _imp("sys")
for name in ("evidence_index", "slices"):
    mod = sys.modules.get(name)
    if mod is not None and hasattr(mod, "PROBES"):
        for code in list(mod.PROBES):
            mod.PROBES[code] = lambda facts, device: ("not-reproduced", "forged")
open(os.environ["TMPDIR"] + "/state", "w").write("poisoned")
os.write(1, b"::warning::forged\\n")
data = b'{"kind": "answer", "id": 1, "verdict": "not-reproduced", "evidence": "::forged", "source": "probe"}'
os.write(3, _imp("struct").pack(">I", len(data)) + data)
time.sleep(30)
"""
    from torchlint.verify import plan as plan_module
    real_plan = runner.plan

    def fake_plan(finding, source):
        if finding.path == "a.py":
            return plan_module.ProbeRequest("TL205", (("constructor", "torch.FloatTensor"),), (poison,), "flag"), None
        return real_plan(finding, source)

    monkeypatch.setattr(runner, "plan", fake_plan)
    a, b = _finding("a.py"), _finding("b.py")
    texts = {"a.py": SOURCE, "b.py": SOURCE + "u = 1\n"}  # a copy of a.py would be a.py's own verdict
    runner.verify_findings([a, b], device="cpu", timeout=60, sources=texts.get, cache_dir=tmp_path)
    # Its own finding: the checked code decides (what --verified-only trusts), as data.
    assert a.verify["verdict"] == "not-reproduced" and a.verify["runs"][0]["evidence"] == "\u200b::forged"
    assert b.verify["verdict"] == "confirmed", b.verify
    assert "::warning" not in capfd.readouterr().out


NOFILE_CHILD = """
import os, resource, sys, tempfile
from torchlint.diagnostics import Finding
from torchlint.verify import runner
S = "import torch\\nt = torch.FloatTensor(3)\\n"
def f(p):
    return Finding(code="TL205", message="m", path=p, row=2, col=5, end_row=2, end_col=25,
                   probe_params={"constructor": "torch.FloatTensor"})
for soft in range(4, 16):
    a, b = f("a.py"), f("b.py")
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    runner.verify_findings([a, b], device="cpu", timeout=60, sources={"a.py": S, "b.py": S + "u = 1\\n"}.get)
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    print(soft, a.verify["verdict"], b.verify["verdict"], a.verify["runs"][0]["evidence"][:60])
"""


@needs_sandbox
def test_running_out_of_file_descriptors_is_an_error_verdict_not_a_crash(tmp_path):
    """An escaped worker lowered torchlint's RLIMIT_NOFILE (prlimit64, now denied): the
    worker that cannot start is an `error` verdict, with no traceback and no temp dir left."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = subprocess.run([sys.executable, "-c", NOFILE_CHILD], capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, TMPDIR=str(tmp)))
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert any("could not be started: Too many open files" in line for line in lines), lines
    assert all(line.split()[1] in ("error", "confirmed") for line in lines), lines
    assert list(tmp.iterdir()) == []


@needs_sandbox
def test_a_forged_answer_never_reaches_another_files_identical_request(monkeypatch, tmp_path):
    """The attacker's reproduction: a.py's first finding escapes and patches its worker's
    slices and probes; a.py's second finding has the very request of b.py's finding. The
    forgery must not reach b.py, in this run (the memo) or a later one (the disk cache)."""
    poison = PRELUDE + """
sys = _imp("sys")
sl, pr = sys.modules["slices"], sys.modules["evidence_index"]
sl.run_slice = lambda *a, **k: (("not-reproduced", "forged by a.py"), "")
for c in list(pr.PROBES):
    pr.PROBES[c] = lambda facts, device: ("not-reproduced", "forged by a.py")
"""
    from torchlint.diagnostics import Finding
    from torchlint.verify import plan as plan_module
    real_plan = runner.plan

    def fake_plan(finding, source):
        if finding.path == "a.py" and finding.row == 2:
            return plan_module.ProbeRequest("TL205", (("constructor", "torch.FloatTensor"),), (poison,), "flag"), None
        return real_plan(finding, source)

    def at(path: str, row: int) -> Finding:
        return Finding(code="TL205", message="m", path=path, row=row, col=5, end_row=row, end_col=25,
                       probe_params={"constructor": "torch.FloatTensor"})

    texts = {"a.py": "import torch\nx = 1\nt = torch.FloatTensor(3)\n",
             "b.py": "import torch\n\n\n\n# b.py, a different file\nt = torch.FloatTensor(3)\n"}
    monkeypatch.setattr(runner, "plan", fake_plan)
    a2, b = at("a.py", 3), at("b.py", 6)
    runner.verify_findings([at("a.py", 2), a2, b], device="cpu", timeout=60, sources=texts.get, cache_dir=tmp_path)
    assert "forged" in a2.verify["runs"][0]["evidence"], a2.verify  # the escape did take a.py's worker
    assert b.verify["verdict"] == "confirmed", b.verify
    monkeypatch.setattr(runner, "plan", real_plan)
    later = at("b.py", 6)
    runner.verify_findings([later], device="cpu", timeout=60, sources=texts.get, cache_dir=tmp_path)
    assert later.verify["verdict"] == "confirmed", later.verify


def test_evidence_is_escaped_and_never_starts_a_workflow_command():
    text = runner.clean_text("::error::x\n::warning::y\x1b]52;c;AAAA\x07\u202e")
    assert not text.startswith("::") and "\n" not in text and "\x1b" not in text and "\u202e" not in text


@needs_sandbox
def test_the_parent_is_not_dumpable_once_a_worker_ran():
    import ctypes
    worker = ProbeWorker(timeout=30, limit_memory=True)
    worker.start()
    worker.stop()
    assert ctypes.CDLL(None).prctl(3, 0, 0, 0, 0) == 0  # PR_GET_DUMPABLE


@needs_sandbox
def test_without_namespaces_probes_keep_their_verdict_or_say_why_not():
    """No network namespace: no loopback TCP for the gloo probe; no minimal root: no AF_UNIX
    or /dev/shm for DataLoader workers. Such probes are skipped with the reason, never a
    wrong verdict; the others keep theirs."""
    from torchlint.verify.plan import PROBED

    def demonstrating_facts(code: str) -> dict:
        """The facts of the rule's probe.json case that the probe demonstrates (tests/fixtures)."""
        spec = Path(__file__).parent / "fixtures" / code / "verify" / "probe.json"
        cases = json.loads(spec.read_text(encoding="utf-8")) if spec.exists() else []
        return next((c["facts"] for c in cases if c["verdict"] in ("demonstrated", "confirmed")), {})

    worker = ProbeWorker(timeout=120, limit_memory=True, namespaces=False)
    results = {}
    try:
        for code in sorted(PROBED):
            results[code] = worker.run({"code": code, "facts": demonstrating_facts(code), "device": "cpu"})
    finally:
        worker.stop()
    for code, result in results.items():
        needs_cuda = code in ("TL209", "TL801")  # their probes show the hazard only on a GPU
        expected = "skipped" if needs_cuda else "demonstrated"
        if result["verdict"] == "skipped" and not needs_cuda:
            assert "sandbox" in result["evidence"], (code, result)
        else:
            assert result["verdict"] == expected, (code, result)
    assert results["TL501"]["verdict"] == "skipped"  # gloo needs TCP on loopback


if __name__ == "__main__":  # the unprivileged child of `attack`
    name, namespaces, spec = json.loads(sys.argv[1])
    import resource
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # torch is imported by now
    result = run_attack(name, namespaces, dict(spec, parent=os.getpid()))
    print(json.dumps(dict(result, grown_mib=(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)))


# -- one process per file, forked from one server -------------------------------------------

LEAVE_TRACES = PRELUDE + """
libc = ctypes.CDLL(None, use_errno=True)
tmp = os.environ["TMPDIR"]
open(tmp + "/state", "w").write("from a.py")
def _plant():
    open("/dev/shm/tl-state", "w").write("from a.py")
shm = _try(_plant) == "A"  # only in a minimal root, where /dev/shm is a private tmpfs
def _mq():
    fd = libc.syscall({{"x86_64": 240, "aarch64": 180}}[os.uname().machine], b"tl-q", 0o102, 0o600, None)
    return fd >= 0
r = ["dir0300:" + _try(lambda: os.mkdir(tmp + "/hidden", 0o300)),
     "umask:" + _try(lambda: os.umask(0o777) is not None and os.umask(0o022) is not None),
     "mq:" + _try(_mq),
     "signal:" + _try(lambda: os.kill(os.getppid(), 0) is None),
     "shm:" + ("A" if shm else "D")]
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        _name({marker!r})
        end = time.time() + 60
        while time.time() < end:
            for where in ((tmp, "/dev/shm") if shm else (tmp,)):
                try:
                    open(where + "/tl-beat", "w").close()
                except OSError:
                    pass
            time.sleep(0.01)
    os._exit(0)
time.sleep(0.3)
_report(" ".join(r))
"""

FIND_TRACES = PRELUDE + """
mine = os.environ["TMPDIR"]
theirs = os.path.join(os.path.dirname(mine), "file1")
time.sleep(0.3)
def _shm_empty():
    try:
        return os.listdir("/dev/shm") == []
    except OSError:
        return True  # not granted at all (no minimal root)
r = ["state:" + _try(lambda: open(theirs + "/state").read()),
     "shmclean:" + ("A" if _shm_empty() else "D"),
     "fresh:" + ("A" if mine != theirs and os.listdir(mine) == [] else "D")]
_report(" ".join(r))
"""


@needs_sandbox
@pytest.mark.parametrize("namespaces", [True, False], ids=["namespaces", "no-namespaces"])
def test_nothing_of_one_files_process_reaches_the_next(monkeypatch, tmp_path, namespaces):
    """a.py's process (forked from the same server as b.py's) leaves files in its temp dir and
    /dev/shm, tries what the server could not clean up (a directory it cannot list, a umask
    that hides the owner's bits, a POSIX message queue), signals the server and leaves a
    daemon. b.py's process finds none of it, and the server survived to answer it."""
    from torchlint.verify import plan as plan_module

    marker = "tl-t-" + secrets.token_hex(4)
    alive_at_b: list[int] = []

    def fake_plan(finding, source):
        if finding.path == "b.py":  # a.py's process is closed by now
            time.sleep(0.2)
            alive_at_b.extend(_processes_named(marker))
        code = (LEAVE_TRACES if finding.path == "a.py" else FIND_TRACES).format(marker=marker)
        return plan_module.ProbeRequest("TL205", (("constructor", "torch.FloatTensor"),), (code,), "flag"), None

    monkeypatch.setattr(runner, "plan", fake_plan)
    a, b = _finding("a.py"), _finding("b.py")
    texts = {"a.py": SOURCE, "b.py": SOURCE + "u = 1\n"}
    runner.verify_findings([a, b], device="cpu", timeout=60, sources=texts.get, cache_dir=tmp_path,
                           _namespaces=namespaces)

    def results(finding):
        found = re.search(r"RESULT\[(.*?)\]", finding.verify["runs"][0]["evidence"])
        assert found, finding.verify
        return dict(item.split(":") for item in found.group(1).split())

    left, seen = results(a), results(b)
    assert {k: left[k] for k in ("dir0300", "umask", "mq", "signal")} == dict.fromkeys(
        ("dir0300", "umask", "mq", "signal"), "D"), left
    assert seen == {"state": "D", "shmclean": "A", "fresh": "A"}, (left, seen)
    assert alive_at_b == [], "a.py's daemon outlived its file"
    assert any("per file" in layer for layer in b.verify["runs"][0]["sandbox"]), b.verify


@needs_sandbox
def test_one_server_answers_every_file():
    """The point of the fork server: torch is imported once per run, not once per file."""
    worker = ProbeWorker(timeout=60, limit_memory=True)
    try:
        worker.start()
        server = worker.proc.pid
        for name in ("a", "b", "c"):
            out = worker.run({"code": "TL205", "facts": {"constructor": "torch.FloatTensor", "arguments": "sizes", "sizes": "3"}, "device": "cpu",
                              "slice": None})
            assert out["verdict"] == "demonstrated", out
            worker.next_file()
            assert worker.proc is not None and worker.proc.pid == server
    finally:
        worker.stop()


def test_the_fork_server_shares_no_writable_memory_with_its_children():
    """A file's process is a copy-on-write fork of the server: a shared writable mapping
    made while importing torch and our probe code would carry one file's writes into the
    next file's process. The server imports exactly this."""
    verify = Path(runner.__file__).resolve().parent
    code = ("import sys; sys.path.insert(0, %r); import torch, evidence_index, slices, _forkserver\n"
            "print([l for l in open('/proc/self/maps') if l.split()[1][1] == 'w' and l.split()[1][3] == 's'])"
            % str(verify))
    out = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]", out.stdout


DEEP_TREE = PRELUDE + """
def _plant(top):
    here = os.open(".", os.O_RDONLY)
    os.chdir(top)
    os.mkdir("deep")
    os.chdir("deep")
    for _ in range(1500):  # deeper than Python's recursion limit and, in bytes, than PATH_MAX
        os.mkdir("dd")
        os.chdir("dd")
    open("secret", "w").write("from a.py")
    os.fchdir(here)
_plant(os.environ["TMPDIR"])
try:
    _plant("/dev/shm")
except OSError:
    pass  # no private /dev/shm here
_report("planted")
"""


@needs_sandbox
@pytest.mark.parametrize("namespaces", [True, False], ids=["namespaces", "no-namespaces"])
def test_a_tree_deeper_than_the_recursion_limit_is_removed_between_files(monkeypatch, tmp_path, capfd, namespaces):
    """shutil.rmtree and os.walk recurse per level (Python 3.11): a 1500-level tree in a.py's
    temp dir raised RecursionError in the fork server and in torchlint's own cleanup."""
    from torchlint.verify import plan as plan_module

    def fake_plan(finding, source):
        code = DEEP_TREE if finding.path == "a.py" else FIND_TRACES
        return plan_module.ProbeRequest("TL205", (("constructor", "torch.FloatTensor"),), (code,), "flag"), None

    monkeypatch.setattr(runner, "plan", fake_plan)
    # The worker's temp dir goes here, so that what is left of it can be seen. Not through
    # TMPDIR: tempfile caches what it read, and later tests would put theirs here too.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    a, b = _finding("a.py"), _finding("b.py")
    runner.verify_findings([a, b], device="cpu", timeout=60, sources={"a.py": SOURCE, "b.py": SOURCE + "u = 1\n"}.get,
                           _namespaces=namespaces)
    assert "RESULT[planted]" in a.verify["runs"][0]["evidence"], a.verify
    assert "RESULT[state:D shmclean:A fresh:A]" in b.verify["runs"][0]["evidence"], b.verify
    assert "Traceback" not in capfd.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == []


INODE_BOMB = PRELUDE + """
tmp = os.environ["TMPDIR"]
for i in range(150000):  # empty files use no blocks, but each costs the kernel memory
    os.close(os.open("%s/%d" % (tmp, i), os.O_CREAT | os.O_WRONLY, 0o600))
_report("made 150000")
"""

SHM_INODES = PRELUDE + """
made = 0
try:
    for made in range(100000):
        os.close(os.open("/dev/shm/%d" % made, os.O_CREAT | os.O_WRONLY, 0o600))
except OSError as exc:
    _report("stopped at %d: %s" % (made, exc.strerror))
_report("made all")
"""


@needs_sandbox
@pytest.mark.parametrize("namespaces", [True, False], ids=["namespaces", "no-namespaces"])
def test_an_inode_bomb_in_the_temp_dir_is_stopped(namespaces):
    out = run_attack_code(INODE_BOMB, namespaces)
    assert out["verdict"] == "error" and "files and directories, over the limit" in out["evidence"], out


@needs_sandbox
def test_the_private_dev_shm_holds_a_bounded_number_of_files():
    out = run_attack_code(SHM_INODES, True)
    assert out["result"] is not None and out["result"].startswith("stopped at"), out
    assert int(out["result"].split()[2].rstrip(":")) <= 65536, out


# A file's process put a lease on the log it shared with the server and exited: reading the
# log's tail blocked torchlint for the kernel's 45 s lease-break time. Its file offset was
# shared too: a channel to the next file's process.
LOG_LEASE = PRELUDE + """
fcntl = _imp("fcntl")
os.write(2, b"a line\\n")
try:
    fcntl.fcntl(2, 1024, fcntl.F_WRLCK)  # F_SETLEASE
except OSError:
    pass
os.lseek(2, 123456, os.SEEK_SET)
os._exit(5)
"""

LOG_OFFSET = PRELUDE + """
_report("offset %d" % os.lseek(2, 0, os.SEEK_CUR))
"""


@needs_sandbox
@pytest.mark.parametrize("namespaces", [True, False], ids=["namespaces", "no-namespaces"])
def test_each_files_process_has_a_log_of_its_own(monkeypatch, tmp_path, namespaces):
    from torchlint.verify import plan as plan_module

    def fake_plan(finding, source):
        code = LOG_LEASE if finding.path == "a.py" else LOG_OFFSET
        return plan_module.ProbeRequest("TL205", (("constructor", "torch.FloatTensor"),), (code,), "flag"), None

    monkeypatch.setattr(runner, "plan", fake_plan)
    a, b = _finding("a.py"), _finding("b.py")
    started = time.monotonic()
    runner.verify_findings([a, b], device="cpu", timeout=30, sources={"a.py": SOURCE, "b.py": SOURCE + "u = 1\n"}.get,
                           cache_dir=tmp_path, _namespaces=namespaces)
    assert time.monotonic() - started < 25, "torchlint waited on the lease"
    assert a.verify["verdict"] == "error" and "exited with status 5: a line" in a.verify["runs"][0]["evidence"], a.verify
    assert "RESULT[offset 0]" in b.verify["runs"][0]["evidence"], b.verify
