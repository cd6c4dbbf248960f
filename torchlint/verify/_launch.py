"""Launcher between torchlint and one probe worker (stdlib only, run as `python -I`).

torchlint starts it in a new session with an environment reduced to what Python and CUDA
need, the request pipe on stdin, a log file on stdout/stderr and the verdict channel on
fd 3. It:

1. dies with torchlint (PR_SET_PDEATHSIG) and becomes a child subreaper, so every process
   the worker starts stays in its tree, however it detaches (double fork, setsid);
2. enters new namespaces where the kernel allows it (sandbox.enter_namespaces);
3. forks the worker, which confines itself (sandbox.confine: minimal root, unprivileged
   uid, rlimits, no_new_privs, Landlock, seccomp), writes one trusted frame naming the
   active layers (or why it refused) and only then execs `python -I _worker.py`;
4. waits for it, then kills whatever is left of its tree.

argv: launcher, worker script, JSON policy (sandbox.policy)."""

import ctypes
import json
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _frames  # noqa: E402
import _reap  # noqa: E402
import sandbox  # noqa: E402


def init(libc: ctypes.CDLL, argv: list[str], env: dict[str, str]) -> None:
    """pid 1 of the PID namespace (already confined): the worker must not be pid 1, which
    ignores signals it has no handler for. Reaps orphans; exits with the worker's status
    (128 + signal when it was killed); when it exits, the kernel kills the namespace."""
    worker = os.fork()
    if worker == 0:
        libc.prctl(sandbox.PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        os.execve(argv[0], argv, env)
    os.close(_frames.CHANNEL_FD)
    os.close(0)
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            os._exit(1)
        if pid == worker:
            os._exit(128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status))


def main() -> None:
    worker, cfg = sys.argv[1], json.loads(sys.argv[2])
    channel = _frames.CHANNEL_FD
    if cfg["channel"] != channel:
        os.dup2(cfg["channel"], channel)
        os.close(cfg["channel"])
    if not sys.platform.startswith("linux"):
        if not cfg["unsandboxed"]:
            _frames.send(channel, {"kind": "refused", "reason": f"there is no OS sandbox for {sys.platform}"})
            sys.exit(3)
        _frames.send(channel, {"kind": "sandbox", "layers": [f"UNSANDBOXED (--verify-unsandboxed) on {sys.platform}"]})
        os.execv(cfg["python"], [cfg["python"], "-I", worker])
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(sandbox.PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != cfg["parent"]:
        os._exit(1)  # torchlint died before the death signal was armed
    libc.prctl(sandbox.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    namespaces = sandbox.enter_namespaces(cfg)
    pid = os.fork()
    if pid == 0:
        try:
            libc.prctl(sandbox.PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            layers = sandbox.confine(cfg, namespaces, (channel,))
        except Exception as exc:  # noqa: BLE001 - any failure here means no sandbox: refuse
            _frames.send(channel, {"kind": "refused", "reason": str(exc)[:500]})
            os._exit(3)
        env = dict(os.environ, TORCHLINT_SANDBOX=json.dumps(layers), HOME=cfg["write"][0], TMPDIR=cfg["write"][0],
                   TORCHLINT_NET_ISOLATED="1" if "net" in namespaces else "0",
                   TORCHLINT_FILE_POLICY=json.dumps(sandbox.file_policy(cfg, namespaces)))
        _frames.send(channel, {"kind": "sandbox", "layers": layers})
        if "pid" in namespaces:
            init(libc, [cfg["python"], "-I", worker], env)
        os.execve(cfg["python"], [cfg["python"], "-I", worker], env)
    os.close(channel)
    os.close(0)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda s, f: os.kill(pid, signal.SIGKILL))
    _, status = os.waitpid(pid, 0)
    _reap.sweep(os.getpid())
    killed = os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
    if "pid" in namespaces and os.WIFEXITED(status) and os.WEXITSTATUS(status) > 128:
        killed = os.WEXITSTATUS(status) - 128  # the worker's signal, as init reported it
    if killed:
        signal.signal(killed, signal.SIG_DFL)
        os.kill(os.getpid(), killed)
    sys.exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


if __name__ == "__main__":
    main()
