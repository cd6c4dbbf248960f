"""Speed benchmark: torchlint (cold and warm cache) against TorchFix, flake8, ruff and an
`ast.parse` floor, on the same files, in one run. Prints CPU-seconds, wall seconds, peak RSS
(the largest single process of the tool's process tree) and ratios against torchlint.

    pip install ruff flake8 torchfix==0.7.0      # the peers; missing ones are skipped
    python benchmarks/speed.py                   # all corpora, all tools
    python benchmarks/speed.py --corpus timm --skip torchfix
    python benchmarks/speed.py --corpus transformers-models --skip torchfix,flake8,ruff --no-scaling --copies 8
    python benchmarks/speed.py --corpus transformers-models --skip torchfix,flake8,ruff --no-scaling --floor-pairs 5

Not a test: timings on shared machines are noisy. Run it on an idle machine.
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from corpus import CORPORA, corpus_path, python_files

REPO = Path(__file__).resolve().parent.parent


@dataclass
class Measurement:
    tool: str
    cpu: float
    wall: float
    rss_mb: float
    ok: bool = True
    note: str = ""


def measure(tool: str, cmd: list[str], cwd: Path | None = None) -> Measurement:
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=cwd)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    code = os.waitstatus_to_exitcode(status)
    # Linters exit 1 on findings; anything else is a failure worth showing.
    ok = code in (0, 1)
    return Measurement(tool, usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss / 1024, ok,
                       "" if ok else f"exit {code}: {err.strip().splitlines()[-1:] }")


def floor(paths: list[str]) -> None:
    """`ast.parse` of every file, in this one process: the least any ast linter can do."""
    for root in paths:
        for path in python_files(Path(root)):
            try:
                ast.parse(path.read_bytes())
            except (SyntaxError, ValueError):
                pass


def tool_commands(paths: list[str], cache_dir: str, jobs: int | None) -> dict[str, list[str] | None]:
    py = sys.executable
    jobs_args = ["--jobs", str(jobs)] if jobs else []
    torchlint = [py, "-m", "torchlint", "check", *paths, "--isolated", "--exit-zero", "-q",
                 "--output-format", "concise", "--cache-dir", cache_dir, *jobs_args]
    have = lambda module: subprocess.run([py, "-c", f"import {module}"], capture_output=True).returncode == 0  # noqa: E731
    return {
        "torchlint cold": torchlint,
        "torchlint warm": torchlint,
        "torchfix": [py, "-m", "torchfix", *paths] if have("torchfix") else None,
        "flake8": [py, "-m", "flake8", "--exit-zero", *paths] if have("flake8") else None,
        "ruff": [py, "-m", "ruff", "check", "--select", "ALL", "--no-cache", "--exit-zero", "--quiet", *paths]
        if have("ruff") else None,
        "ast.parse floor": [py, __file__, "--floor", *paths],
    }


def run_corpus(name: str, paths: list[str], skip: set[str], jobs: int | None) -> list[Measurement]:
    files = sum(len(python_files(Path(p))) for p in paths)
    size = sum(p.stat().st_size for root in paths for p in python_files(Path(root))) / 1e6
    print(f"\n## {name}: {files} files, {size:.1f} MB")
    cache_dir = tempfile.mkdtemp(prefix="torchlint-bench-cache-")
    results = []
    try:
        for tool, cmd in tool_commands(paths, cache_dir, jobs).items():
            if tool.split()[0] in skip or tool in skip:
                continue
            if cmd is None:
                print(f"  {tool:<17} not installed, skipped")
                continue
            m = measure(tool, cmd)
            results.append(m)
    finally:
        shutil.rmtree(cache_dir, ignore_errors=True)
    cold = next((m for m in results if m.tool == "torchlint cold"), None)
    base = next((m for m in results if m.tool == "ast.parse floor"), None)
    print(f"  {'tool':<17}{'CPU s':>9}{'wall s':>9}{'peak RSS MB':>13}{'CPU vs torchlint':>18}{'wall vs torchlint':>19}"
          f"{'CPU vs floor':>14}")
    for m in results:
        cpu_ratio = f"{m.cpu / cold.cpu:.2f}x" if cold and cold.cpu else "-"
        wall_ratio = f"{m.wall / cold.wall:.3f}x" if cold and cold.wall else "-"
        floor_ratio = f"{m.cpu / base.cpu:.2f}x" if base and base.cpu else "-"  # issue 23's figure, same run
        print(f"  {m.tool:<17}{m.cpu:>9.2f}{m.wall:>9.2f}{m.rss_mb:>13.0f}{cpu_ratio:>18}{wall_ratio:>19}{floor_ratio:>14}"
              + (f"   FAILED {m.note}" if not m.ok else ""))
    return results


def floor_pairs(paths: list[str], jobs: int | None, count: int) -> None:
    """torchlint cold and the floor, run back to back `count` times: the ratio of each pair,
    and their median. On a shared machine either run alone can be 20% off; a pair shares
    the machine's state, and the median of pairs is the figure to compare (issue 23)."""
    ratios = []
    print(f"\n## cold vs floor, {count} back-to-back pairs")
    for _ in range(count):
        cache_dir = tempfile.mkdtemp(prefix="torchlint-bench-cache-")
        try:
            commands = tool_commands(paths, cache_dir, jobs)
            cold = measure("torchlint cold", commands["torchlint cold"])
            base = measure("ast.parse floor", commands["ast.parse floor"])
        finally:
            shutil.rmtree(cache_dir, ignore_errors=True)
        ratios.append(cold.cpu / base.cpu)
        print(f"  torchlint cold {cold.cpu:.2f} CPU s, floor {base.cpu:.2f} CPU s: {ratios[-1]:.2f}x")
    print(f"  median {statistics.median(ratios):.2f}x the floor (target <= 1.8x)")


def scaling(jobs: int | None) -> None:
    """torchlint cold on growing slices of transformers' models/: cost per file should stay flat."""
    root = corpus_path("transformers-models")
    dirs = sorted(str(d) for d in root.iterdir() if d.is_dir())
    print("\n## scaling (transformers models/, torchlint cold)")
    print(f"  {'slice':<8}{'files':>7}{'CPU s':>9}{'wall s':>9}{'CPU ms/file':>13}")
    for fraction in (0.25, 0.5, 1.0):
        part = dirs[: max(1, int(len(dirs) * fraction))]
        files = sum(len(python_files(Path(d))) for d in part)
        cache_dir = tempfile.mkdtemp(prefix="torchlint-bench-cache-")
        try:
            m = measure("torchlint", tool_commands(part, cache_dir, jobs)["torchlint cold"])
        finally:
            shutil.rmtree(cache_dir, ignore_errors=True)
        print(f"  {fraction:<8.0%}{files:>7}{m.cpu:>9.2f}{m.wall:>9.2f}{1000 * m.cpu / files:>13.2f}")


def copies(name: str, count: int, jobs: int | None) -> None:
    """Peak RSS of a cold run (cache on, the default) over 1 and `count` copies of a corpus:
    memory must stay flat in the number of files, not grow with the bytes linted."""
    source = corpus_path(name)
    work = Path(tempfile.mkdtemp(prefix="torchlint-bench-copies-"))
    try:
        for n in range(count):
            shutil.copytree(source, work / f"copy{n}")
        print(f"\n## peak RSS, {name}: 1 copy against {count} (torchlint cold, cache on)")
        rss = []
        for dirs in ([work / "copy0"], sorted(work.iterdir())):
            cache_dir = tempfile.mkdtemp(prefix="torchlint-bench-cache-")
            try:
                m = measure("torchlint", tool_commands([str(d) for d in dirs], cache_dir, jobs)["torchlint cold"])
            finally:
                shutil.rmtree(cache_dir, ignore_errors=True)
            rss.append(m.rss_mb)
            print(f"  {len(dirs)} cop{'y' if len(dirs) == 1 else 'ies'}: {m.cpu:.2f} CPU s, {m.wall:.2f} s wall, "
                  f"peak RSS {m.rss_mb:.0f} MB" + ("" if m.ok else f"   FAILED {m.note}"))
        print(f"  ratio {count} copies / 1 copy: {rss[1] / rss[0]:.2f}x (target <= 1.3x)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--floor":
        floor(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default=",".join(CORPORA), help="comma-separated: " + ", ".join(CORPORA))
    parser.add_argument("--skip", default="", help="comma-separated tools to skip (torchfix, flake8, ruff, ...)")
    parser.add_argument("--jobs", type=int, default=None, help="torchlint --jobs (default: all cores)")
    parser.add_argument("--no-scaling", action="store_true", help="skip the three-size scaling run")
    parser.add_argument("--copies", type=int, default=0, help="also compare peak RSS on 1 and N copies of each corpus")
    parser.add_argument("--floor-pairs", type=int, default=0,
                        help="also run torchlint cold and the floor back to back N times: the median ratio")
    args = parser.parse_args()
    skip = {s for s in args.skip.split(",") if s}
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores")
    for name in args.corpus.split(","):
        run_corpus(name, [str(corpus_path(name))], skip, args.jobs)
        if args.copies > 1:
            copies(name, args.copies, args.jobs)
        if args.floor_pairs > 0:
            floor_pairs([str(corpus_path(name))], args.jobs, args.floor_pairs)
    if not args.no_scaling:
        scaling(args.jobs)


if __name__ == "__main__":
    main()
