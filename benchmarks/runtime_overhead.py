"""Overhead of `torchlint run` (monitors in every process, --max-steps 0 so both runs do the
same work, with --report) against running the same command plainly, on examples/run and a small real
training script. Prints best-of-N wall seconds and CPU seconds (user+sys of every process,
torchlint's own included) and their ratios; the target is < 1.5x wall. CPU seconds are the
steadier number on a busy machine.

    python benchmarks/runtime_overhead.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
WORKLOADS = {
    "examples/run/tl102_data_write_before_backward.py": [sys.executable],
    "examples/run/tl301_worker_rng.py": [sys.executable],
    "examples/run/tl501_ddp_counts.py": TORCHRUN,
    "benchmarks/runtime_workload.py": [sys.executable],
}


def measure(command: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the command's whole process tree)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def best(command: list[str], repeat: int) -> tuple[float, float]:
    runs = [measure(command) for _ in range(repeat)]
    return min(w for w, _ in runs), min(c for _, c in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs of each command; the best counts")
    args = parser.parse_args()
    print(f"{'workload':<50} {'plain s':>8} {'run s':>8} {'wall x':>7} {'plain cpu':>10} {'run cpu':>8} {'cpu x':>6}")
    ratios = []
    for script, launcher in WORKLOADS.items():
        plain = best([*launcher, script], args.repeat)
        with tempfile.TemporaryDirectory() as scratch:  # the HTML report too: its series are recorded in every run
            monitored = best([sys.executable, "-m", "torchlint", "run", "--max-steps", "0", "--exit-zero", "--report",
                              os.path.join(scratch, "report.html"), "--", *launcher, script], args.repeat)
        ratios.append((monitored[0] / plain[0], monitored[1] / plain[1]))
        print(f"{script:<50} {plain[0]:8.2f} {monitored[0]:8.2f} {ratios[-1][0]:7.2f} "
              f"{plain[1]:10.2f} {monitored[1]:8.2f} {ratios[-1][1]:6.2f}")
    print(f"{'worst':<50} {'':>8} {'':>8} {max(r[0] for r in ratios):7.2f} {'':>10} {'':>8} "
          f"{max(r[1] for r in ratios):6.2f}")
    step_overhead()
    tiny_mlp_overhead()


def tiny_mlp_overhead(steps: int = 1000, repeat: int = 5) -> None:
    """The monitors' cost per step over a whole 1,000-step run of a tiny MLP, in one process
    (the issue's target: at most +0.1 ms per step). Each monitored run has a fresh Monitor, so
    its first, fully watched steps count; plain and monitored runs alternate, best of `repeat`."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    from torchlint.runtime.monitor import ListSink, Monitor

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    x, y = torch.randn(8, 16), torch.randint(0, 4, (8,))

    def run(monitor: Monitor | None) -> float:
        if monitor is not None:
            monitor.install()
        start = time.process_time()
        for _ in range(steps):
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()
        elapsed = time.process_time() - start
        if monitor is not None:
            monitor.uninstall()
        return elapsed

    run(None)  # warm-up
    plain, watched = [], []
    for _ in range(repeat):
        plain.append(run(None))
        watched.append(run(Monitor(ListSink())))
    extra = (min(watched) - min(plain)) / steps * 1e3
    print(f"in-process, {steps} steps of a tiny MLP (CPU s, best of {repeat}): plain {min(plain) / steps * 1e3:.3f} "
          f"ms/step, monitored {min(watched) / steps * 1e3:.3f} ms/step: +{extra:.3f} ms/step (target <= 0.1)")


def step_overhead(blocks: int = 15, steps: int = 10) -> None:
    """The monitors' cost per training step, in one process: blocks of steps with and without
    the monitors alternate, so a busy machine slows both alike. One monitor is installed and
    removed around each monitored block, so its caches are warm as in a real run."""
    sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]
    import torch
    import torch.nn.functional as F
    from runtime_workload import SmallCnn

    from torchlint.runtime.monitor import ListSink, Monitor

    torch.manual_seed(0)
    model = SmallCnn()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.randn(40, 1, 28, 28), torch.randint(0, 10, (40,))

    def block() -> float:
        start = time.perf_counter()
        for _ in range(steps):
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()
        return time.perf_counter() - start

    monitor = Monitor(ListSink())
    block()  # warm-up
    plain, watched = [], []
    for _ in range(blocks):
        plain.append(block())
        monitor.install()
        watched.append(block())
        monitor.uninstall()
    plain.sort()
    watched.sort()
    middle = blocks // 2
    print(f"in-process, blocks of {steps} steps of runtime_workload's CNN (batch 40): plain {plain[0] / steps * 1e3:.1f} "
          f"ms/step, monitored {watched[0] / steps * 1e3:.1f} ms/step; ratio of best {watched[0] / plain[0]:.2f}, "
          f"of medians {watched[middle] / plain[middle]:.2f}")


if __name__ == "__main__":
    main()
