"""The OS sandbox of the `--verify` worker (stdlib only: `_launch.py` imports it by path,
before any checked code or torch is loaded). SECURITY.md describes the layering.

Parent side: `policy()` lists what the worker may read, execute and write.
Launcher side: `enter_namespaces()` runs in the launcher (so the worker is pid 1 of a new
PID namespace), `confine()` in the forked worker just before it execs the worker script:
minimal root (mount namespace), unprivileged uid, rlimits, closed fds, no_new_privs,
Landlock, seccomp. Landlock and seccomp are required: when either cannot be established,
`confine` raises Refused and no checked code runs (unless the user passed
--verify-unsandboxed)."""

from __future__ import annotations

import ctypes
import os
import random
import socket
import stat
import struct
import sys
import sysconfig

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

if __package__:  # imported by torchlint
    from torchlint.verify import _landlock, _seccomp
else:  # by the launcher, from its own directory
    import _landlock  # type: ignore[no-redef]
    import _seccomp  # type: ignore[no-redef]

CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER = 0x00020000, 0x08000000, 0x10000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MNT_DETACH = 2
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER = 1, 4, 36
PR_CAPBSET_DROP, PR_SET_SECUREBITS = 24, 28
SECUREBITS_ALL_LOCKED_NO_KEEP = 0xEF  # noroot, no-setuid-fixup, no-ambient-raise, all locked
REQUIRED = ("landlock", "seccomp")
# What torch and Python read outside the interpreter's own directories (found by trial).
SYSTEM_READ = ("/usr/lib", "/usr/lib64", "/usr/lib32", "/usr/local/lib", "/lib", "/lib64", "/lib32",
               "/usr/share/zoneinfo", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime",
               "/etc/nsswitch.conf", "/etc/passwd", "/etc/group", "/etc/hosts", "/proc/cpuinfo", "/proc/meminfo",
               "/proc/stat", "/proc/sys/kernel", "/proc/sys/vm/overcommit_memory", "/sys/devices/system/cpu",
               "/sys/devices/system/node", "/sys/fs/cgroup", "/dev/null", "/dev/zero", "/dev/urandom", "/dev/random",
               "/dev/full")
DEVICES = ("/dev/null", "/dev/zero", "/dev/urandom", "/dev/random", "/dev/full")
# Opened for writing by common packages at import (dill, which torch imports when it is
# installed, opens it O_RDWR and O_WRONLY|O_TRUNC); what is written there is discarded.
DISCARD = ("/dev/null",)


class Refused(Exception):
    """A required layer could not be established: nothing of the checked code may run."""


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _prctl(option: int, arg: int) -> bool:
    return _libc().prctl(option, ctypes.c_ulong(arg), 0, 0, 0) == 0


def make_parent_undumpable() -> None:
    """torchlint itself: other processes of its uid (an escaped worker) cannot read its
    /proc/<pid>/environ or memory, nor ptrace it."""
    if sys.platform.startswith("linux"):
        _prctl(PR_SET_DUMPABLE, 0)


# -- parent side ---------------------------------------------------------------------------

def _python_dirs() -> list[str]:
    dirs: set[str] = set()
    for prefix in {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}:
        paths = sysconfig.get_paths(vars={"base": prefix, "platbase": prefix, "installed_base": prefix,
                                          "installed_platbase": prefix})
        dirs.update(paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths)
    dirs.update(p for p in sys.path if p.endswith(("site-packages", "dist-packages", "lib-dynload")))
    if sys.prefix != sys.base_prefix:
        dirs.add(os.path.join(sys.prefix, "pyvenv.cfg"))
    for prefix in {sys.base_prefix, sys.base_exec_prefix}:
        libdir = os.path.join(prefix, "lib")  # libpython and friends, unless the prefix is /usr
        if prefix not in ("/usr", "/"):
            dirs.add(libdir)
    return sorted(os.path.realpath(d) if os.path.islink(d) else d for d in dirs)


def _elf_interpreter(path: str) -> str:
    """PT_INTERP of an ELF file, or "" (static binaries, non-ELF)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(64)
            if head[:4] != b"\x7fELF" or head[4] != 2:
                return ""
            phoff, = struct.unpack_from("<Q", head, 32)
            phentsize, phnum = struct.unpack_from("<HH", head, 54)
            fh.seek(phoff)
            table = fh.read(phentsize * phnum)
            for i in range(phnum):
                p_type, _, p_offset, _, _, p_filesz = struct.unpack_from("<IIQQQQ", table, i * phentsize)
                if p_type == 3:
                    fh.seek(p_offset)
                    return fh.read(p_filesz).rstrip(b"\0").decode()
    except (OSError, struct.error, UnicodeDecodeError, IndexError):
        pass
    return ""


def _project_entries(project: str) -> list[str]:
    """The project's top-level entries, read-only, except .git (a checkout's token). A
    granted path is resolved, so a committed symlink (`g -> .git`, `h -> ../home`,
    `rootfs -> /`) is granted only when it stays inside the project, outside .git."""
    try:
        names = sorted(os.listdir(project))
    except OSError:
        return []
    git = os.path.join(project, ".git")
    entries = []
    for name in names:
        path = os.path.join(project, name)
        if name == ".git":
            continue
        if os.path.islink(path):
            real = os.path.realpath(path)
            if real == project or not _under(real, project) or _under(real, git):
                continue
        entries.append(path)
    return entries[:256]  # each is a bind mount


def policy(tmp: str, project: str = "", namespaces: bool = True, unsandboxed: bool = False,
           address_space: int = 0, cpu_seconds: int = 0, simulate_missing: tuple[str, ...] = (),
           extra_read: tuple[str, ...] = ()) -> dict[str, Any]:
    """The launcher's whole configuration, as JSON-able data."""
    exe = os.path.realpath(sys.executable)
    home = os.path.realpath(os.path.expanduser("~"))
    here = os.path.dirname(os.path.abspath(__file__))
    read = [p for p in _python_dirs() if not _under(p, home) or _under(sys.base_prefix, home) or _under(sys.prefix, home)]
    read += [p for p in SYSTEM_READ if not _under(p, home)]
    read += [here, *extra_read]
    if project and os.path.realpath(project) not in ("/", home):
        read += _project_entries(os.path.realpath(project))
    execute = [sys.executable, exe] + [p for p in (_elf_interpreter(exe),) if p]
    return {"tmp": tmp, "read": read, "execute": execute, "write": [os.path.join(tmp, "work")],
            "namespaces": namespaces, "unsandboxed": unsandboxed, "address_space": address_space,
            "cpu_seconds": cpu_seconds, "simulate_missing": list(simulate_missing), "parent": os.getpid(),
            "python": sys.executable, "root": os.getuid() == 0}


def _under(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


# -- launcher side -------------------------------------------------------------------------

def enter_namespaces(cfg: dict[str, Any]) -> list[str]:
    """Called in the launcher before it forks the worker. Returns the namespaces entered."""
    if not cfg["namespaces"] or not sys.platform.startswith("linux"):
        return []
    libc = _libc()
    uid, gid = os.getuid(), os.getgid()
    base = CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWNS
    for flags, names in (((base, ["net", "pid", "ipc", "mount"]),) if uid == 0 else ()) + \
            ((base | CLONE_NEWUSER, ["user", "net", "pid", "ipc", "mount"]),
             (CLONE_NEWUSER | CLONE_NEWNET, ["user", "net"])):
        if libc.unshare(flags) != 0:
            continue
        if flags & CLONE_NEWUSER:
            # Map ourselves to the same ids inside, so files keep their owners.
            for path, text in (("/proc/self/setgroups", "deny"), ("/proc/self/uid_map", f"{uid} {uid} 1"),
                               ("/proc/self/gid_map", f"{gid} {gid} 1")):
                try:
                    with open(path, "w") as fh:
                        fh.write(text)
                except OSError:
                    pass
        return names
    return []


def _loopback_up() -> None:
    SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
    import fcntl
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        req = struct.pack("16sH", b"lo", 0)
        flags = struct.unpack("16sH", fcntl.ioctl(sock, SIOCGIFFLAGS, req))[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sH", b"lo", flags | IFF_UP))


def _enc(value: Any) -> Any:
    return value.encode() if isinstance(value, str) else value


def _mount(source: Any, target: str, fstype: Any, flags: int, data: Any = None) -> None:
    if _libc().mount(_enc(source), _enc(target), _enc(fstype), ctypes.c_ulong(flags), _enc(data)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {target}: {os.strerror(err)}")


def _mirror(new: str, path: str, writable: bool, depth: int = 0) -> None:
    """Make `path` appear at the same place under `new`: symlinked components become the
    same symlinks, the rest a bind mount (read-only unless `writable`)."""
    if depth > 16 or not os.path.lexists(path):
        return
    parts = path.strip("/").split("/")
    cur = ""
    for i, part in enumerate(parts):
        cur += "/" + part
        if os.path.islink(cur):
            dest = new + cur
            if not os.path.lexists(dest):
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                os.symlink(os.readlink(cur), dest)
            rest = "/".join(parts[i + 1:])
            target = os.path.normpath(os.path.join(os.path.dirname(cur), os.readlink(cur)))  # one step
            _mirror(new, target + ("/" + rest if rest else ""), writable, depth + 1)
            return
        if os.path.ismount(new + cur) and cur != path:
            return  # already inside a bind mount
    dest = new + path
    if os.path.lexists(dest) and os.path.ismount(dest):
        return
    if os.path.isdir(path):
        os.makedirs(dest, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        open(dest, "a").close()
    _mount(path, dest, None, MS_BIND | MS_REC)
    if not writable:
        st = os.statvfs(path)
        locked = (MS_NOSUID if st.f_flag & os.ST_NOSUID else 0) | (MS_NODEV if st.f_flag & os.ST_NODEV else 0) | \
                 (MS_NOEXEC if st.f_flag & os.ST_NOEXEC else 0)
        _mount(None, dest, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | locked)


def minimal_root(cfg: dict[str, Any], pid_ns: bool) -> None:
    """Pivot into a tmpfs that holds only what the policy names: host unix sockets, $HOME,
    /tmp, /run and the rest of the file system are not there at all."""
    new = os.path.join(cfg["tmp"], "root")
    os.makedirs(new, exist_ok=True)
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _mount("tmpfs", new, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=16m,nr_inodes=4096")
    for path in sorted(set(cfg["read"] + cfg["execute"]) - set(DEVICES) - {"/proc/cpuinfo", "/proc/meminfo",
                                                                            "/proc/stat"}):
        if not path.startswith("/proc/"):
            _mirror(new, path, writable=False)
    for path in DEVICES:
        if os.path.exists(path):
            dest = new + path
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            open(dest, "a").close()
            _mount(path, dest, None, MS_BIND)
    for path in cfg["write"]:
        _mirror(new, path, writable=True)
    os.makedirs(new + "/dev/shm", exist_ok=True)
    _mount("tmpfs", new + "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=256m,nr_inodes=65536")
    os.makedirs(new + "/tmp", exist_ok=True)
    os.makedirs(new + "/proc", exist_ok=True)
    try:
        if not pid_ns:
            raise OSError("no PID namespace")
        _mount("proc", new + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    except OSError:
        _mount("/proc", new + "/proc", None, MS_BIND | MS_REC)  # Landlock still limits it to the entries named
    os.chdir(new)
    libc = _libc()
    if libc.syscall(155 if os.uname().machine == "x86_64" else 41, b".", b".") != 0:
        raise OSError(ctypes.get_errno(), "pivot_root failed")
    if libc.umount2(b".", MNT_DETACH) != 0:
        raise OSError(ctypes.get_errno(), "umount of the old root failed")
    os.chdir("/")


def _pick_uid() -> int:
    """An otherwise unused uid, so RLIMIT_NPROC and the final sweep cover exactly ours."""
    used = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                used.add(os.stat(f"/proc/{entry}").st_uid)
            except OSError:
                pass
    while True:
        uid = random.randint(0x60000000, 0x6FFFFFFF)
        if uid not in used:
            return uid


def _readable_by_others(paths: list[str]) -> bool:
    for path in paths:
        cur = "/"
        for part in path.strip("/").split("/"):
            try:
                mode = os.stat(cur).st_mode
            except OSError:
                return False
            if not mode & stat.S_IXOTH:
                return False
            cur = os.path.join(cur, part)
    return True


def _drop_capabilities() -> None:
    libc = _libc()
    libc.prctl(PR_SET_SECUREBITS, ctypes.c_ulong(SECUREBITS_ALL_LOCKED_NO_KEEP), 0, 0, 0)
    for cap in range(64):
        if libc.prctl(PR_CAPBSET_DROP, ctypes.c_ulong(cap), 0, 0, 0) != 0:
            break
    header = struct.pack("=Ii", 0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this thread
    data = bytes(24)  # two empty __user_cap_data_struct
    if libc.syscall(126 if os.uname().machine == "x86_64" else 91, header, data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")


def drop_root(cfg: dict[str, Any], minimal: bool) -> str:
    """Root becomes a fresh unprivileged uid; where the interpreter is not reachable for
    another uid (a Python under /root without a minimal root), root without capabilities."""
    if os.getuid() != 0:
        return ""
    if minimal or _readable_by_others(cfg["execute"] + [p for p in cfg["read"] if "python" in p]):
        uid = _pick_uid()
        os.chown(cfg["write"][0], uid, uid)
        if not minimal:
            os.chmod(cfg["tmp"], 0o711)  # its parent: enough to reach the work dir, nothing to list
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
        os.environ["TORCHLINT_SANDBOX_UID"] = str(uid)
        return f"uid {uid}"
    _drop_capabilities()
    return "root without capabilities"


def _user_processes() -> int:
    uid, count = os.getuid(), 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                count += os.stat(f"/proc/{entry}").st_uid == uid
            except OSError:
                pass
    return count


def set_limits(cfg: dict[str, Any], fresh_uid: bool) -> None:
    import resource  # POSIX only: torchlint imports this module on every platform
    nproc = 64 if fresh_uid else _user_processes() + 64  # DataLoader workers and gloo ranks fit, a fork bomb not
    limits = [(resource.RLIMIT_NPROC, nproc), (resource.RLIMIT_CORE, 0), (resource.RLIMIT_FSIZE, 1 << 30),
              (resource.RLIMIT_NOFILE, 4096)]
    if cfg["address_space"]:
        limits.append((resource.RLIMIT_AS, cfg["address_space"]))
    if cfg["cpu_seconds"]:
        limits.append((resource.RLIMIT_CPU, cfg["cpu_seconds"]))
    for which, value in limits:
        soft, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(which, (value, value))


def confine(cfg: dict[str, Any], namespaces: list[str], keep_fds: tuple[int, ...]) -> list[str]:
    """In the forked worker, before exec: establish every layer, return their names."""
    layers = ["session", "pdeathsig"]
    missing = set(cfg["simulate_missing"])
    if "net" in namespaces:
        _loopback_up()
    minimal = False
    if "mount" in namespaces and "mount" not in missing:
        try:
            minimal_root(cfg, "pid" in namespaces)
            minimal = True
        except OSError:
            pass  # AF_UNIX stays denied below
    layers += [f"{ns} namespace" for ns in namespaces if ns != "mount"] + (["minimal root"] if minimal else [])
    if minimal:
        cfg["write"].append("/dev/shm")  # a private tmpfs: multiprocessing locks, shared tensors
    who = drop_root(cfg, minimal)
    if who:
        layers.append(who)
    _prctl(PR_SET_PDEATHSIG, 9)  # again: a change of uid clears it
    set_limits(cfg, who.startswith("uid"))
    layers.append("rlimits")
    os.closerange(3, keep_fds[0])
    os.closerange(keep_fds[-1] + 1, 65536)
    if not _prctl(38, 1):  # PR_SET_NO_NEW_PRIVS
        raise Refused("prctl(PR_SET_NO_NEW_PRIVS) failed")
    layers.append("no_new_privs")
    failures = []
    try:
        if "landlock" in missing:
            raise OSError("Landlock is not available (simulated)")
        # /proc only for the fork server, which sweeps its per-file processes' trees; their
        # nested domains (confine_file) leave it out, and Landlock grants the intersection.
        abi = _landlock.restrict(cfg["read"] + ["/proc"], cfg["execute"], [*cfg["write"], *DISCARD],
                                 deny_tcp="net" not in namespaces, scope=True)
        layers.append(f"landlock ABI {abi}" + (" (TCP denied)" if abi >= 4 and "net" not in namespaces else "")
                      + (" (signals and abstract unix sockets scoped)" if abi >= 6 else ""))
    except OSError as exc:
        failures.append(str(exc.strerror or exc))
    abstract_isolated = "net" in namespaces or ("landlock" in " ".join(layers) and _landlock.abi_version() >= 6)
    try:
        if "seccomp" in missing:
            raise OSError("seccomp is not available (simulated)")
        _seccomp.install(allow_unix=minimal and abstract_isolated, allow_inet="net" in namespaces)
        layers.append("seccomp" + (" (AF_UNIX allowed)" if minimal and abstract_isolated else " (no AF_UNIX)")
                      + (" (loopback TCP in the network namespace)" if "net" in namespaces else " (no AF_INET)"))
    except OSError as exc:
        failures.append(str(exc.strerror or exc))
    os.chdir(cfg["write"][0])
    if failures and not cfg["unsandboxed"]:
        raise Refused("; ".join(failures))
    if failures:
        layers.append("UNSANDBOXED (--verify-unsandboxed): " + "; ".join(failures))
    return layers


# -- per-file side (in the fork server's child, before the file's code runs) ----------------

PER_FILE_LAYER = "a process of its own per file (nested Landlock domain, writes only its own temp dir)"


def file_policy(cfg: dict[str, Any], namespaces: list[str]) -> dict[str, Any]:
    """What confine_file needs, handed to the fork server in its environment."""
    return {"read": cfg["read"], "execute": cfg["execute"], "shm": "/dev/shm" in cfg["write"],
            "deny_tcp": "net" not in namespaces, "required": not cfg["unsandboxed"],
            "simulate_missing": cfg["simulate_missing"]}


def confine_file(spec: dict[str, Any], work: str) -> list[str]:
    """A second Landlock domain inside the worker's (reads as before, minus /proc; writes
    only `work` and the private /dev/shm) and a second seccomp filter (_seccomp.build_per_file).
    Raises Refused when either fails, unless --verify-unsandboxed."""
    failures, layers = [], []
    try:
        if "landlock" in spec["simulate_missing"]:
            raise OSError("Landlock is not available (simulated)")
        _landlock.restrict(spec["read"], spec["execute"], [work, *DISCARD] + (["/dev/shm"] if spec["shm"] else []),
                           deny_tcp=spec["deny_tcp"], scope=True)
        layers.append(PER_FILE_LAYER)
    except OSError as exc:
        failures.append(str(exc.strerror or exc))
    try:
        if "seccomp" in spec["simulate_missing"]:
            raise OSError("seccomp is not available (simulated)")
        _seccomp.install_per_file()
        layers.append("seccomp per file (directories the server can remove, no message queues)")
    except OSError as exc:
        failures.append(str(exc.strerror or exc))
    if failures and spec["required"]:
        raise Refused("; ".join(failures))
    if failures:
        layers.append("UNSANDBOXED per file (--verify-unsandboxed): " + "; ".join(failures))
    return layers
