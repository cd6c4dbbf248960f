"""No process the program started outlives `torchlint run`: after Ctrl-C (SIGINT), SIGTERM, a
crash of the program, or the --timeout. The program here is plain Python (no torch), so the
test is about process supervision alone: a plain child, a forked worker (as DataLoader and
torchrun start them), a grandchild, and a child that detached into its own session."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

PROGRAM = textwrap.dedent("""
    import multiprocessing
    import os
    import subprocess
    import sys
    import time


    def worker():
        time.sleep(300)


    if __name__ == "__main__":
        forked = multiprocessing.get_context("fork").Process(target=worker, daemon=True)  # as DataLoader workers
        forked.start()
        plain = subprocess.Popen(["sleep", "300"])
        detached = subprocess.Popen(["sleep", "301"], start_new_session=True)
        shell = subprocess.Popen(["sh", "-c", "sleep 302 & wait"])
        time.sleep(0.5)  # let the shell start its own child
        with open(sys.argv[1] + ".tmp", "w") as out:
            out.write(" ".join(str(p) for p in (os.getpid(), forked.pid, plain.pid, detached.pid, shell.pid)))
        os.rename(sys.argv[1] + ".tmp", sys.argv[1])
        if sys.argv[2] == "crash":
            time.sleep(1)  # the test takes its census of processes meanwhile
            raise RuntimeError("the training script crashed")
        time.sleep(300)
""")


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def descendants_of(pids: list[int]) -> set[int]:
    """Every process whose parent chain reaches one of `pids` (the shell's `sleep`)."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="utf-8") as handle:
                    parents[int(entry)] = int(handle.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
    found, frontier = set(pids), set(pids)
    while frontier:
        frontier = {p for p, ppid in parents.items() if ppid in frontier} - found
        found |= frontier
    return found


def start(tmp_path: Path, mode: str, *options: str) -> tuple[subprocess.Popen, set[int]]:
    script = tmp_path / "spawner.py"
    script.write_text(PROGRAM, encoding="utf-8")
    pid_file = tmp_path / "pids"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    proc = subprocess.Popen([sys.executable, "-m", "torchlint", "run", *options, "--", sys.executable, str(script),
                             str(pid_file), mode],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)  # so a signal reaches torchlint alone, as from a terminal
    deadline = time.monotonic() + 60
    while not pid_file.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"the program did not start: {proc.communicate()}")
        time.sleep(0.05)
    pids = [int(p) for p in pid_file.read_text().split()]
    started = descendants_of(pids)
    assert len(started) >= 6 and all(alive(p) for p in pids)
    return proc, started


def finish(proc: subprocess.Popen) -> tuple[int, str]:
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    return proc.returncode, err


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_interrupt_stops_every_child(tmp_path, sig):
    proc, started = start(tmp_path, "block")
    os.kill(proc.pid, sig)
    code, err = finish(proc)
    assert code == 130, err
    assert "was interrupted" in err
    assert not [p for p in started if alive(p)]


def test_crash_stops_every_child(tmp_path):
    proc, started = start(tmp_path, "crash")
    code, err = finish(proc)
    assert code == 1, err  # the program's own exit code
    assert "RuntimeError: the training script crashed" in err
    assert "exited with code 1" in err
    assert not [p for p in started if alive(p)]


def test_timeout_stops_every_child_and_is_an_error(tmp_path):
    proc, started = start(tmp_path, "block", "--timeout", "3")
    code, err = finish(proc)
    assert code == 124, err
    assert "was stopped at the --timeout of 3 s" in err
    assert "error: the program did not finish within the --timeout of 3 s" in err
    assert not [p for p in started if alive(p)]


def test_sigkill_to_torchlint_leaves_no_orphans(tmp_path):
    """SIGKILL cannot be caught: the program dies with us (PR_SET_PDEATHSIG), the watchdog stops
    the rest, the child that detached into its own session included."""
    proc, started = start(tmp_path, "block")
    proc.kill()
    proc.wait(timeout=10)
    deadline = time.monotonic() + 20
    while [p for p in started if alive(p)] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p in started if alive(p)]


def test_the_watchdog_sweeps_the_program_and_nothing_else():
    """What the watchdog kills once torchlint is gone: the program's session and descendants and
    the orphans re-parented to torchlint later, not torchlint's earlier children or strangers."""
    from torchlint.runtime.watchdog import _ours

    torchlint, program = 100, 200
    table = {  # pid: (ppid, session, start time)
        torchlint: (1, 50, "t0"),
        150: (torchlint, 50, "t1"),  # a child of torchlint from before the program
        program: (torchlint, program, "t2"),
        201: (program, program, "t3"),  # a DataLoader worker
        202: (201, program, "t4"),  # its child
        203: (torchlint, 203, "t5"),  # detached with setsid, its parent gone: re-parented to us
        204: (203, 203, "t6"),
        300: (1, 300, "t7"),  # a stranger
    }
    assert set(_ours(torchlint, program, {(150, "t1")}, table)) == {program, 201, 202, 203, 204}
    del table[torchlint]  # torchlint died: its children now belong to init, the session remains
    table[203] = (1, 203, "t5")
    assert set(_ours(torchlint, program, {(150, "t1")}, table)) == {program, 201, 202}


TORCHRUN_WORKERS = textwrap.dedent("""
    import os
    import sys
    import time

    import torch
    from torch.utils.data import DataLoader, TensorDataset

    if __name__ == "__main__":
        loader = DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=8, num_workers=2, persistent_workers=True)
        iterator = iter(loader)
        next(iterator)
        pids = [os.getpid()] + [w.pid for w in iterator._workers]
        target = os.path.join(sys.argv[1], f"rank{os.environ['RANK']}")
        with open(target + ".tmp", "w") as out:
            out.write(" ".join(map(str, pids)))
        os.rename(target + ".tmp", target)
        time.sleep(300)
""")


@pytest.mark.torch
def test_ctrl_c_stops_torchrun_ranks_and_their_dataloader_workers(tmp_path):
    pytest.importorskip("torch")
    script = tmp_path / "ranks.py"
    script.write_text(TORCHRUN_WORKERS, encoding="utf-8")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    proc = subprocess.Popen([sys.executable, "-m", "torchlint", "run", "--", sys.executable, "-m",
                             "torch.distributed.run", "--standalone", "--nproc-per-node", "2", str(script),
                             str(tmp_path)],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    deadline = time.monotonic() + 120
    while not ((tmp_path / "rank0").exists() and (tmp_path / "rank1").exists()):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"the ranks did not start: {proc.communicate()}")
        time.sleep(0.1)
    pids = [int(p) for rank in ("rank0", "rank1") for p in (tmp_path / rank).read_text().split()]
    started = descendants_of([proc.pid]) | set(pids)
    assert len(pids) == 6 and all(alive(p) for p in pids)
    os.kill(proc.pid, signal.SIGINT)
    code, err = finish(proc)
    assert code == 130, err
    assert not [p for p in started - {proc.pid} if alive(p)]
