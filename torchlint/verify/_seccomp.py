"""A raw seccomp-bpf filter, installed with prctl through ctypes (stdlib only, no libseccomp).

It denies (EPERM) the system calls that reach other processes' memory, the kernel's key,
module, mount and namespace machinery, and io_uring (whose requests a filter cannot see);
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
    },
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
    code = build(allow_unix, allow_inet, machine)
    buf = ctypes.create_string_buffer(code, len(code))
    prog = _SockFprog(len(code) // 8, ctypes.cast(buf, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"seccomp filter could not be installed: {errno.errorcode.get(err, err)}")
