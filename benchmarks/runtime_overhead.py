"""Overhead of `torchlint run` (monitors in every process, --max-steps 0 so both runs do the
same work) against running the same command plainly, on examples/run and a small real
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
        monitored = best([sys.executable, "-m", "torchlint", "run", "--max-steps", "0", "--exit-zero", "--",
                          *launcher, script], args.repeat)
        ratios.append((monitored[0] / plain[0], monitored[1] / plain[1]))
        print(f"{script:<50} {plain[0]:8.2f} {monitored[0]:8.2f} {ratios[-1][0]:7.2f} "
              f"{plain[1]:10.2f} {monitored[1]:8.2f} {ratios[-1][1]:6.2f}")
    print(f"{'worst':<50} {'':>8} {'':>8} {max(r[0] for r in ratios):7.2f} {'':>10} {'':>8} "
          f"{max(r[1] for r in ratios):6.2f}")

if __name__ == "__main__":
    main()
