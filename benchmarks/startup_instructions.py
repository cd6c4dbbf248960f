"""Instructions (valgrind's `I refs`) of the one-file runs of benchmarks/startup.py: a count
that a shared, noisy machine does not change, for comparing two versions where CPU
milliseconds differ by more between runs than between versions.

    python benchmarks/startup_instructions.py                  # this checkout
    python benchmarks/startup_instructions.py --base HEAD~3    # and a worktree of that commit

Prints millions of instructions for `python -c pass`, `check FILE --no-cache` (cold) and a
lint cache hit where no recorded answer applies (valgrind's own environment already keeps
the replay from answering), and each against `python -c pass`. Milliseconds are roughly
instructions / 4.1M on the 2-core machines these figures were taken on (benchmarks/startup.py
gives the CPU time itself). Needs valgrind; not a test.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "train_ddp.py"


def instructions(cmd: list[str], cwd: str, env: dict[str, str]) -> float:
    """Millions of instructions the command (and its children) ran."""
    done = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", "--trace-children=yes",
                           "--cachegrind-out-file=/dev/null", *cmd], cwd=cwd, env=env, capture_output=True, text=True)
    counts = [int(m.replace(",", "")) for m in re.findall(r"I\s+refs:\s+([\d,]+)", done.stderr)]
    if not counts:
        raise SystemExit(f"valgrind gave no count for {cmd}: {done.stderr[-500:]}")
    return sum(counts) / 1e6


def measure(tree: str, scratch: str) -> tuple[float, float]:
    """(cold, cache hit) for the torchlint package in `tree`."""
    work = tempfile.mkdtemp(dir=scratch)
    shutil.copy(EXAMPLE, work)
    old = time.time() - 60  # outside the racy window, as startup.py does
    os.utime(os.path.join(work, EXAMPLE.name), (old, old))
    env = {**os.environ, "PYTHONPATH": tree, "PYTHONHASHSEED": "0",
           "XDG_CACHE_HOME": tempfile.mkdtemp(dir=scratch)}  # the MAC key, outside the project
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # users' bytecode is cached
    check = [sys.executable, "-m", "torchlint", "check", EXAMPLE.name, "--exit-zero", "-q"]
    subprocess.run([*check, "--no-cache"], cwd=work, env=env, capture_output=True)  # compile the modules
    cold = instructions([*check, "--no-cache"], work, env)
    subprocess.run(check, cwd=work, env=env, capture_output=True)  # fill the lint cache
    return cold, instructions(check, work, env)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", help="also measure this commit (a temporary git worktree)")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    scratch = tempfile.mkdtemp(prefix="torchlint-instructions-")
    trees = [("this checkout", str(REPO))]
    try:
        if args.base:
            base = os.path.join(scratch, "base")
            subprocess.run(["git", "-C", str(REPO), "worktree", "add", "-f", "--detach", base, args.base],
                           check=True, capture_output=True)
            trees.insert(0, (args.base, base))
        floor = instructions([sys.executable, "-c", "pass"], scratch, {**os.environ, "PYTHONHASHSEED": "0"})
        print(f"python {sys.version.split()[0]}: millions of instructions (x python -c pass = {floor:.1f}M)")
        for name, tree in trees:
            cold, hit = measure(tree, scratch)
            print(f"  {name:16}  cold {cold:7.1f}M ({cold / floor:.2f}x)  lint cache hit {hit:7.1f}M ({hit / floor:.2f}x)")
    finally:
        if args.base:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", os.path.join(scratch, "base")],
                           capture_output=True)
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
