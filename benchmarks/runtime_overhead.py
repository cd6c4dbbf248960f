"""Wall-clock overhead of `torchlint run` (monitors in every process, --max-steps 0 so both
runs do the same work) against running the same command plainly, on examples/run and a small
real training script. Prints best-of-N wall seconds and the ratio; the target is < 1.5x.

    python benchmarks/runtime_overhead.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
WORKLOADS = {
    "examples/run/tl102_data_write_before_backward.py": [sys.executable],
    "examples/run/tl301_worker_rng.py": [sys.executable],
    "examples/run/tl501_ddp_even_counts.py": TORCHRUN,
    "benchmarks/runtime_workload.py": [sys.executable],
}


def wall(command: list[str]) -> float:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    start = time.perf_counter()
    subprocess.run(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs of each command; the best counts")
    args = parser.parse_args()
    print(f"{'workload':<52} {'plain s':>8} {'run s':>8} {'ratio':>6}")
    ratios = []
    for script, launcher in WORKLOADS.items():
        plain_cmd = [*launcher, script]
        monitored_cmd = [sys.executable, "-m", "torchlint", "run", "--max-steps", "0", "--exit-zero", "--",
                         *launcher, script]
        plain = min(wall(plain_cmd) for _ in range(args.repeat))
        monitored = min(wall(monitored_cmd) for _ in range(args.repeat))
        ratios.append(monitored / plain)
        print(f"{script:<52} {plain:8.2f} {monitored:8.2f} {monitored / plain:6.2f}")
    print(f"{'worst ratio':<52} {'':>8} {'':>8} {max(ratios):6.2f}")


if __name__ == "__main__":
    main()
