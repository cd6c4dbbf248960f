"""The seccomp filter and the Landlock binding carry raw syscall numbers per architecture.
This machine runs only one of them, so the numbers of the other (aarch64 here) are checked
against the kernel's own tables in the installed Linux headers (linux-libc-dev)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from torchlint.verify import _landlock, _seccomp

HEADERS = {"x86_64": Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h"),
           "aarch64": Path("/usr/include/asm-generic/unistd.h")}  # aarch64 uses the generic table
# The numbers that the filter keeps without a name beside them.
NAMED = {
    "x86_64": {"prlimit64": 302, "sched_setparam": 142, "sched_setscheduler": 144, "sched_setaffinity": 203,
               "sched_setattr": 314, "setpriority": 141, "ioprio_set": 251, "socket": 41, "clone": 56,
               "clone3": 435, "mkdir": 83, "mkdirat": 258, "umask": 95, "mq_open": 240, "mq_getsetattr": 245,
               "landlock_create_ruleset": 444, "landlock_add_rule": 445, "landlock_restrict_self": 446},
    "aarch64": {"prlimit64": 261, "sched_setparam": 118, "sched_setscheduler": 119, "sched_setaffinity": 122,
                "sched_setattr": 274, "setpriority": 140, "ioprio_set": 30, "socket": 198, "clone": 220,
                "clone3": 435, "mkdirat": 34, "umask": 166, "mq_open": 180, "mq_getsetattr": 185,
                "landlock_create_ruleset": 444, "landlock_add_rule": 445, "landlock_restrict_self": 446},
}


def _table(arch: str) -> dict[str, int]:
    path = HEADERS[arch]
    if not path.exists():
        pytest.skip(f"no Linux headers for {arch} ({path})")
    return {m.group(1): int(m.group(2))
            for m in re.finditer(r"#define __NR(?:3264)?_(\w+)\s+(\d+)\b", path.read_text())}


@pytest.mark.parametrize("arch", sorted(HEADERS))
def test_every_syscall_number_matches_the_kernel_table(arch):
    table = _table(arch)
    expected = {**_seccomp._DENIED[arch], **NAMED[arch]}
    newest = max(table.values())
    # Calls newer than these headers (fchmodat2, setxattrat, ...) have one number on every
    # architecture since Linux 5.1 (the unified range from 403 up): the same on both.
    newer = {name: nr for name, nr in expected.items() if name not in table and nr > newest}
    wrong = {name: (nr, table.get(name)) for name, nr in expected.items() if name not in newer and table.get(name) != nr}
    assert wrong == {}, wrong
    other = "aarch64" if arch == "x86_64" else "x86_64"
    assert {n: {**_seccomp._DENIED[other], **NAMED[other]}.get(n) for n in newer} == newer


@pytest.mark.parametrize("arch", sorted(HEADERS))
def test_the_unnamed_numbers_are_the_named_ones(arch):
    named = NAMED[arch]
    assert set(_seccomp._SELF_ONLY[arch]) == {named[n] for n in ("prlimit64", "sched_setparam", "sched_setscheduler",
                                                                 "sched_setaffinity", "sched_setattr", "setpriority",
                                                                 "ioprio_set")}
    assert (_seccomp._SOCKET[arch], _seccomp._CLONE[arch], _seccomp._CLONE3) == (named["socket"], named["clone"],
                                                                                  named["clone3"])
    assert set(_seccomp._MKDIR_MODE_ARG[arch]) == {named[n] for n in ("mkdir", "mkdirat") if n in named}
    assert _seccomp._UMASK[arch] == named["umask"]
    assert _seccomp._MQUEUE[arch] == range(named["mq_open"], named["mq_getsetattr"] + 1)
    assert _landlock._SYSCALLS[arch] == (named["landlock_create_ruleset"], named["landlock_add_rule"],
                                         named["landlock_restrict_self"])
