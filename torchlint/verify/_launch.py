"""Short-lived launcher between torchlint and the probe worker (stdlib only, run with `-I`).

torchlint starts this file with an environment reduced to what Python and CUDA need, so
`/proc/<ppid>/environ` as seen by the worker holds no tokens. It then:

1. moves into a new user + network namespace when the kernel allows it unprivileged
   (only a loopback interface, brought up for gloo: no route to any other host);
2. forks the worker (`python -I _worker.py`) with a process-count limit and, when asked,
   an address-space limit, and stays as its parent, relaying its exit status. torchlint
   kills the whole process group.

argv: launcher, worker script, address-space limit in bytes (0 = none)."""

import ctypes
import ctypes.util
import fcntl
import os
import resource
import signal
import socket
import struct
import sys

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1


def isolate_network() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        uid, gid = os.getuid(), os.getgid()
        if libc.unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0:
            return False
        # Map ourselves to the same ids inside, so files keep their owners.
        for path, text in (("/proc/self/setgroups", "deny"), ("/proc/self/uid_map", f"{uid} {uid} 1"),
                           ("/proc/self/gid_map", f"{gid} {gid} 1")):
            try:
                with open(path, "w") as fh:
                    fh.write(text)
            except OSError:
                pass
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            req = struct.pack("16sH", b"lo", 0)
            flags = struct.unpack("16sH", fcntl.ioctl(sock, SIOCGIFFLAGS, req))[1]
            fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sH", b"lo", flags | IFF_UP))
        return True
    except (OSError, AttributeError, ValueError):
        return False


def _user_processes() -> int:
    uid, count = os.getuid(), 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                count += os.stat(f"/proc/{entry}").st_uid == uid
            except OSError:
                pass
    return count


def limit_processes(extra: int = 64) -> None:
    """At most `extra` more processes of this user: DataLoader workers and the gloo ranks
    of a probe fit, a fork bomb does not."""
    if not sys.platform.startswith("linux"):
        return
    try:
        allowed = _user_processes() + extra
        soft, hard = resource.getrlimit(resource.RLIMIT_NPROC)
        if hard == resource.RLIM_INFINITY or allowed < hard:
            resource.setrlimit(resource.RLIMIT_NPROC, (allowed, allowed if hard == resource.RLIM_INFINITY else hard))
    except (OSError, ValueError):
        pass


def main() -> None:
    worker, limit = sys.argv[1], int(sys.argv[2])
    env = dict(os.environ, TORCHLINT_NET_ISOLATED="1" if isolate_network() else "0")
    pid = os.fork()
    if pid == 0:
        if limit:
            try:
                resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            except (ValueError, OSError):
                pass
        limit_processes()
        os.execve(sys.executable, [sys.executable, "-I", worker], env)
    os.close(0)
    os.close(1)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda s, f: os.kill(pid, signal.SIGKILL))
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
        os.kill(os.getpid(), os.WTERMSIG(status))
    sys.exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


if __name__ == "__main__":
    main()
