"""The runs people feel: `torchlint check` on one file (cold, and a warm cache hit), on three
files, and `--version`, against `python -c pass` and ruff (when installed). Prints the median
CPU milliseconds (user + system, children included) of repeated fresh processes and the
ratios against the targets of issue 23 (one file cold <= 40 ms, warm hit <= 30 ms).

A warm run is measured three ways: the same command again with nothing changed, and with
the file saved again unchanged just before each run (as an editor's save or pre-commit's
stash and restore leave it), both answered from the recorded output (torchlint/replay.py,
which compares a checked file by its bytes); and a lint cache hit where no recorded answer
applies (a new environment variable each run: the environment is part of a record's key).
The last row is that hit again in a project whose cache holds 1,500 other files (each file
has its own entry, so it should cost what the small project's does).

    python benchmarks/startup.py              # 15 runs of each
    python benchmarks/startup.py --runs 30

Not a test: timings on shared machines are noisy (the median of CPU time is the least noisy
figure a fresh process gives). Run with bytecode caching on, as users have it: with
PYTHONDONTWRITEBYTECODE set and no __pycache__, every run compiles torchlint afresh.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Optional

REPO = Path(__file__).resolve().parent.parent
FILES = [REPO / "examples" / name for name in ("train_ddp.py", "verify_demo.py", "train_clean.py")]
TARGETS = {"check one file, cold": 40.0, "warm: repeated": 30.0, "warm: re-saved unchanged": 30.0,
           "warm: lint cache hit": 30.0, "hit among 1500 cached": 30.0}


def cpu_ms(cmd: list[str], cwd: Path, runs: int, before: Optional[Callable[[], None]] = None) -> float:
    """Median CPU milliseconds of `cmd` over `runs` fresh processes (`before` runs ahead of each)."""
    times = []
    for _ in range(runs):
        if before is not None:
            before()
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, _, usage = os.wait4(proc.pid, 0)
        times.append(1000 * (usage.ru_utime + usage.ru_stime))
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--cached-files", type=int, default=1500, help="size of the big project's cache (0: skip)")
    args = parser.parse_args()
    if sys.flags.dont_write_bytecode or os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print("note: PYTHONDONTWRITEBYTECODE is set; the figures include compiling torchlint on every run")
    work = Path(tempfile.mkdtemp(prefix="torchlint-startup-"))
    try:
        files = [shutil.copy(f, work / f.name) for f in FILES if f.is_file()]
        old = time.time() - 60  # older than the racy window: a run's answer may be recorded
        for path in [work, *files]:
            os.utime(path, (old, old))
        one, three = [Path(files[0]).name], [Path(f).name for f in files[:3]]
        py = sys.executable
        tl = [py, "-m", "torchlint"]
        warm = [*tl, "check", *one, "--exit-zero", "-q"]
        subprocess.run(warm, cwd=work, capture_output=True)  # fill the cache and record the answer
        resave = lambda: os.utime(files[0])  # noqa: E731 - same bytes, a new mtime
        nonce = iter(range(1 << 30))
        no_record = lambda: os.environ.__setitem__("TORCHLINT_BENCH_RUN", str(next(nonce)))  # noqa: E731
        rows: dict[str, tuple[list[str], Optional[Callable[[], None]]]] = {
            "python -c pass": ([py, "-c", "pass"], None),
            "torchlint --version": ([*tl, "--version"], None),
            "check one file, cold": ([*tl, "check", *one, "--no-cache", "--exit-zero", "-q"], None),
            "warm: repeated": (warm, None),
            "warm: re-saved unchanged": (warm, resave),
            "warm: lint cache hit": (warm, no_record),
            "check three files, cold": ([*tl, "check", *three, "--no-cache", "--exit-zero", "-q"], None),
        }
        if args.cached_files:
            big = work / "big"
            big.mkdir()
            for n in range(args.cached_files):
                shutil.copy(files[0], big / f"m{n}.py")
            for path in [big, *big.iterdir()]:
                os.utime(path, (old, old))
            subprocess.run([*tl, "check", ".", "--exit-zero", "-q"], cwd=big, capture_output=True)  # fill its cache
            rows[f"hit among {args.cached_files} cached"] = ([*tl, "check", "m7.py", "--exit-zero", "-q"], no_record)
        if shutil.which("ruff") or subprocess.run([py, "-m", "ruff", "--version"], capture_output=True).returncode == 0:
            rows["ruff check one file"] = ([py, "-m", "ruff", "check", "--no-cache", "--exit-zero", "-q", *one], None)
        measured = {}
        for name, (cmd, before) in rows.items():
            measured[name] = cpu_ms(cmd, work / "big" if name.startswith("hit among") else work, args.runs, before)
            os.environ.pop("TORCHLINT_BENCH_RUN", None)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    base = measured["python -c pass"]
    ruff = measured.get("ruff check one file")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, median of {args.runs} runs")
    print(f"  {'command':<28}{'CPU ms':>9}{'vs python -c pass':>19}{'vs ruff':>9}{'target':>9}")
    for name, ms in measured.items():
        target = TARGETS.get(name)
        verdict = f"{ms / target:.2f}x" if target else "-"
        print(f"  {name:<28}{ms:>9.1f}{ms / base:>18.1f}x{(f'{ms / ruff:.1f}x' if ruff else '-'):>9}{verdict:>9}")


if __name__ == "__main__":
    main()
