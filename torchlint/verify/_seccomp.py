"""A raw seccomp-bpf filter, installed with prctl through ctypes (stdlib only, no libseccomp).

It denies (EPERM) the system calls that reach other processes' memory, the kernel's key,
module, mount and namespace machinery, io_uring (whose requests a filter cannot see), file
metadata changes (chmod, chown, utime, xattrs, mknod: Landlock does not govern them),
memfd and execveat, and SysV IPC; prlimit64, setpriority, ioprio_set and the sched_set*
calls only on the caller itself;
`clone` only without namespace flags, `clone3` (whose flags sit behind a pointer) answers
ENOSYS so libc falls back to `clone`. `socket()` is allowed per address family: AF_UNIX
only when the caller says host sockets are out of reach, AF_INET/AF_INET6/AF_NETLINK only
inside a private network namespace. The filter checks the architecture and kills a process
that enters through another ABI (x32, i386)."""

from __future__ import annotations

import ctypes
import errno
import platform
import struct

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Union

_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_DENIED = {
    "x86_64": {
        "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "pidfd_getfd": 438, "mount": 165,
        "umount2": 166, "pivot_root": 155, "chroot": 161, "setns": 308, "unshare": 272, "keyctl": 250,
        "add_key": 248, "request_key": 249, "bpf": 321, "perf_event_open": 298, "kexec_load": 246,
        "kexec_file_load": 320, "init_module": 175, "finit_module": 313, "delete_module": 176, "personality": 135,
        "userfaultfd": 323, "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
        "open_by_handle_at": 304, "name_to_handle_at": 303, "swapon": 167, "swapoff": 168, "reboot": 169,
        "acct": 163, "syslog": 103, "iopl": 172, "ioperm": 173, "quotactl": 179, "open_tree": 428,
        "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442,
        "uselib": 134, "vhangup": 153,
        # File metadata, which Landlock does not govern: as uid 0 without capabilities (or the
        # caller's uid) the worker could set u+s on, or chmod 777, a file of its owner.
        "chmod": 90, "fchmod": 91, "fchmodat": 268, "fchmodat2": 452, "chown": 92, "fchown": 93,
        "lchown": 94, "fchownat": 260, "utime": 132, "utimes": 235, "utimensat": 280, "futimesat": 261,
        "setxattr": 188, "lsetxattr": 189, "fsetxattr": 190, "removexattr": 197, "lremovexattr": 198,
        "fremovexattr": 199, "setxattrat": 463, "removexattrat": 466, "mknod": 133, "mknodat": 259,
        # Memory the watchdog cannot see, and a way to exec an ELF that never touched the disk.
        "memfd_create": 319, "memfd_secret": 447, "execveat": 322,
        # SysV IPC outlives the sandbox without an IPC namespace and carries state across files.
        "shmget": 29, "shmat": 30, "shmctl": 31, "shmdt": 67, "msgget": 68, "msgsnd": 69, "msgrcv": 70,
        "msgctl": 71, "semget": 64, "semop": 65, "semctl": 66, "semtimedop": 220,
    },
    "aarch64": {
        "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "pidfd_getfd": 438, "mount": 40,
        "umount2": 39, "pivot_root": 41, "chroot": 51, "setns": 268, "unshare": 97, "keyctl": 219,
        "add_key": 217, "request_key": 218, "bpf": 280, "perf_event_open": 241, "kexec_load": 104,
        "kexec_file_load": 294, "init_module": 105, "finit_module": 273, "delete_module": 106, "personality": 92,
        "userfaultfd": 282, "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
        "open_by_handle_at": 265, "name_to_handle_at": 264, "swapon": 224, "swapoff": 225, "reboot": 142,
        "acct": 89, "syslog": 116, "quotactl": 60, "open_tree": 428, "move_mount": 429, "fsopen": 430,
        "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442, "vhangup": 58,
        "fchmod": 52, "fchmodat": 53, "fchmodat2": 452, "fchown": 55, "fchownat": 54, "utimensat": 88,
        "setxattr": 5, "lsetxattr": 6, "fsetxattr": 7, "removexattr": 14, "lremovexattr": 15,
        "fremovexattr": 16, "setxattrat": 463, "removexattrat": 466, "mknodat": 33,
        "memfd_create": 279, "memfd_secret": 447, "execveat": 281,
        "shmget": 194, "shmctl": 195, "shmat": 196, "shmdt": 197, "msgget": 186, "msgctl": 187, "msgrcv": 188,
        "msgsnd": 189, "semget": 190, "semctl": 191, "semtimedop": 192, "semop": 193,
    },
}
# Calls allowed only on the calling process itself: without a PID namespace, Landlock's
# scoping does not stop prlimit64 (RLIMIT_CPU 1 s killed torchlint) or a renice of another
# process. Each maps to (argument index, required value) pairs: pid/who 0 is the caller,
# and setpriority/ioprio_set must name a process (PRIO_PROCESS 0, IOPRIO_WHO_PROCESS 1),
# since who 0 with PRIO_USER means every process of the uid.
_SELF = ((0, 0),)
_SELF_ONLY = {
    "x86_64": {302: _SELF, 142: _SELF, 144: _SELF, 203: _SELF, 314: _SELF, 141: ((0, 0), (1, 0)),
               251: ((0, 1), (1, 0))},  # prlimit64, sched_set{param,scheduler,affinity,attr}, setpriority, ioprio_set
    "aarch64": {261: _SELF, 118: _SELF, 119: _SELF, 122: _SELF, 274: _SELF, 140: ((0, 0), (1, 0)),
                30: ((0, 1), (1, 0))},
}
_SOCKET = {"x86_64": 41, "aarch64": 198}
_CLONE = {"x86_64": 56, "aarch64": 220}
_CLONE3 = 435
_X32_BIT = 0x40000000
AF_UNIX, AF_INET, AF_INET6, AF_NETLINK = 1, 2, 10, 16
_NS_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000 | 0x00000080

_LD_W_ABS, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
_RET_KILL_PROCESS, _RET_ERRNO, _RET_ALLOW = 0x80000000, 0x00050000, 0x7FFF0000
_OFF_NR, _OFF_ARCH, _OFF_ARG0 = 0, 4, 16  # struct seccomp_data; arg0's low word (little endian)
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2


class _Program:
    """BPF with symbolic jump targets, resolved to the relative offsets BPF wants."""

    def __init__(self) -> None:
        self.ops: list[tuple[int, Union[int, str], Union[int, str], int]] = []
        self.labels: dict[str, int] = {}

    def op(self, code: int, k: int, jt: Union[int, str] = 0, jf: Union[int, str] = 0) -> None:
        self.ops.append((code, jt, jf, k))

    def label(self, name: str) -> None:
        self.labels[name] = len(self.ops)

    def assemble(self) -> bytes:
        out = b""
        for i, (code, jt, jf, k) in enumerate(self.ops):
            offsets = []
            for target in (jt, jf):
                rel = self.labels[target] - i - 1 if isinstance(target, str) else target
                if not 0 <= rel <= 255:
                    raise ValueError("seccomp program too long for a jump")
                offsets.append(rel)
            out += struct.pack("=HBBI", code, offsets[0], offsets[1], k & 0xFFFFFFFF)
        return out


def build(allow_unix: bool, allow_inet: bool, machine: str) -> bytes:
    p = _Program()
    p.op(_LD_W_ABS, _OFF_ARCH)
    p.op(_JEQ, _ARCH[machine], 1, 0)
    p.op(_RET, _RET_KILL_PROCESS)
    p.op(_LD_W_ABS, _OFF_NR)
    if machine == "x86_64":
        p.op(_JGE, _X32_BIT, "deny", 0)
    for nr in sorted(_DENIED[machine].values()):
        p.op(_JEQ, nr, "deny", 0)
    for nr in sorted(_SELF_ONLY[machine]):
        p.op(_JEQ, nr, f"self{nr}", 0)
    p.op(_JEQ, _CLONE3, "nosys", 0)
    p.op(_JEQ, _SOCKET[machine], "socket", 0)
    p.op(_JEQ, _CLONE[machine], "clone", 0)
    p.op(_RET, _RET_ALLOW)
    p.label("socket")
    p.op(_LD_W_ABS, _OFF_ARG0)
    families = ([AF_UNIX] if allow_unix else []) + ([AF_INET, AF_INET6, AF_NETLINK] if allow_inet else [])
    for family in families:
        p.op(_JEQ, family, "ok", 0)
    p.op(_RET, _RET_ERRNO | errno.EAFNOSUPPORT)
    p.label("clone")
    p.op(_LD_W_ABS, _OFF_ARG0)
    p.op(_JSET, _NS_FLAGS, "deny", "ok")
    for nr, checks in sorted(_SELF_ONLY[machine].items()):
        p.label(f"self{nr}")
        for i, (arg, value) in enumerate(checks):
            p.op(_LD_W_ABS, _OFF_ARG0 + 8 * arg)  # the low word: the kernel reads these as int
            p.op(_JEQ, value, "ok" if i == len(checks) - 1 else 0, "deny")
    p.label("nosys")
    p.op(_RET, _RET_ERRNO | errno.ENOSYS)
    p.label("deny")
    p.op(_RET, _RET_ERRNO | errno.EPERM)
    p.label("ok")  # BPF jumps only forward: a second "allow" for the argument checks
    p.op(_RET, _RET_ALLOW)
    return p.assemble()


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install(allow_unix: bool, allow_inet: bool) -> None:
    """Raises OSError when the filter cannot be installed (the caller fails closed)."""
    machine = platform.machine()
    if machine not in _ARCH:
        raise OSError(f"seccomp: no filter for architecture {machine}")
    _load(build(allow_unix, allow_inet, machine))


def _load(code: bytes) -> None:
    buf = ctypes.create_string_buffer(code, len(code))
    prog = _SockFprog(len(code) // 8, ctypes.cast(buf, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"seccomp filter could not be installed: {errno.errorcode.get(err, err)}")


# -- the second filter, stacked on the first in each per-file process ----------------------
# The fork server removes what a file's process wrote before the next file's process starts.
# It runs as the same uid without capabilities, so a directory it cannot list or enter
# (mkdir with mode 0300, or a umask that clears the owner's bits) would survive into the
# next file; so would a POSIX message queue, which lives in the IPC namespace they share.
_MKDIR_MODE_ARG = {"x86_64": {83: 1, 258: 2}, "aarch64": {34: 2}}  # mkdir, mkdirat -> index of mode
_UMASK = {"x86_64": 95, "aarch64": 166}
_MQUEUE = {"x86_64": range(240, 246), "aarch64": range(180, 186)}  # mq_open ... mq_getsetattr
_ALU_AND_K = 0x54
_OWNER = 0o700


def build_per_file(machine: str) -> bytes:
    p = _Program()
    p.op(_LD_W_ABS, _OFF_ARCH)
    p.op(_JEQ, _ARCH[machine], 1, 0)
    p.op(_RET, _RET_KILL_PROCESS)
    p.op(_LD_W_ABS, _OFF_NR)
    for nr in _MQUEUE[machine]:
        p.op(_JEQ, nr, "deny", 0)
    for nr in sorted(_MKDIR_MODE_ARG[machine]):
        p.op(_JEQ, nr, f"mkdir{nr}", 0)
    p.op(_JEQ, _UMASK[machine], "umask", 0)
    p.op(_RET, _RET_ALLOW)
    for nr, arg in sorted(_MKDIR_MODE_ARG[machine].items()):
        p.label(f"mkdir{nr}")
        p.op(_LD_W_ABS, _OFF_ARG0 + 8 * arg)
        p.op(_ALU_AND_K, _OWNER)
        p.op(_JEQ, _OWNER, "ok", "deny")
    p.label("umask")
    p.op(_LD_W_ABS, _OFF_ARG0)
    p.op(_ALU_AND_K, _OWNER)
    p.op(_JEQ, 0, "ok", "deny")
    p.label("deny")
    p.op(_RET, _RET_ERRNO | errno.EPERM)
    p.label("ok")
    p.op(_RET, _RET_ALLOW)
    return p.assemble()


def install_per_file() -> None:
    """Raises OSError when the filter cannot be installed (the caller fails closed)."""
    machine = platform.machine()
    if machine not in _ARCH:
        raise OSError(f"seccomp: no filter for architecture {machine}")
    _load(build_per_file(machine))
