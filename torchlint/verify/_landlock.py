"""A small ctypes binding of Landlock (Linux 5.13+), stdlib only: the launcher imports it
before any checked code runs.

`restrict(read, execute, write, deny_tcp, scope)` builds one ruleset and applies it to the
calling thread (and, through execve and fork, to everything it starts). Paths that do not
exist are skipped. Returns the ABI version used; raises OSError when Landlock is missing
or the ruleset cannot be applied, so the caller can fail closed."""

from __future__ import annotations

import ctypes
import os
import platform

# The generic syscall table numbers: the same on x86_64 and aarch64.
_SYSCALLS = {"x86_64": (444, 445, 446), "aarch64": (444, 445, 446)}
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX, SCOPE_SIGNAL = 1 << 0, 1 << 1

_FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV  # the only ones a file rule may carry


def _fs_rights(abi: int) -> int:
    rights = (1 << 13) - 1
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    if abi >= 5:
        rights |= IOCTL_DEV
    return rights


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _numbers() -> tuple[int, int, int]:
    machine = platform.machine()
    if machine not in _SYSCALLS:
        raise OSError(f"Landlock: unsupported architecture {machine}")
    return _SYSCALLS[machine]


def abi_version() -> int:
    """0 when the kernel has no Landlock (or it is disabled)."""
    try:
        create, _, _ = _numbers()
    except OSError:
        return 0
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    abi = libc.syscall(ctypes.c_long(create), None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    return max(int(abi), 0)


def _fail(what: str) -> OSError:
    err = ctypes.get_errno()
    return OSError(err, f"Landlock {what} failed: {os.strerror(err)}")


def restrict(read: list[str], execute: list[str], write: list[str], deny_tcp: bool, scope: bool) -> int:
    abi = abi_version()
    if abi < 1:
        raise OSError("Landlock is not available in this kernel (Linux 5.13+ with Landlock enabled)")
    create, add_rule, restrict_self = _numbers()
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    fs = _fs_rights(abi)
    attr = _RulesetAttr(handled_access_fs=fs)
    size = 8
    if abi >= 4 and deny_tcp:
        attr.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP  # no rule grants a port: all denied
    if abi >= 4:
        size = 16
    if abi >= 6 and scope:
        attr.scoped = SCOPE_ABSTRACT_UNIX | SCOPE_SIGNAL
    if abi >= 6:
        size = 24
    ruleset = libc.syscall(ctypes.c_long(create), ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        raise _fail("create_ruleset")
    try:
        read_dir = READ_FILE | READ_DIR
        write_dir = fs & ~(EXECUTE | MAKE_CHAR | MAKE_BLOCK | IOCTL_DEV)
        grants = [(p, read_dir) for p in read] + [(p, read_dir | EXECUTE) for p in execute] + \
                 [(p, write_dir) for p in write]
        for path, rights in grants:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue  # not on this system
            try:
                if not os.path.isdir(f"/proc/self/fd/{fd}"):
                    rights &= _FILE_RIGHTS
                rule = _PathBeneath(allowed_access=rights & fs, parent_fd=fd)
                if libc.syscall(ctypes.c_long(add_rule), ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH),
                                ctypes.byref(rule), ctypes.c_uint32(0)) != 0:
                    raise _fail(f"add_rule({path})")
            finally:
                os.close(fd)
        if libc.syscall(ctypes.c_long(restrict_self), ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            raise _fail("restrict_self")
    finally:
        os.close(ruleset)
    return abi
