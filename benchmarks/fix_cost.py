"""The cost of `--fix`: lint-only, `--diff` (fixes computed, nothing written), `--fix`
with `--unsafe-fixes` (written), and a second `--fix` (a no-op), on a copy of a corpus.
Prints CPU-seconds, the ratio to lint-only, and how many files and fixes were involved.

    python benchmarks/fix_cost.py                      # transformers 4.46.3 models/
    python benchmarks/fix_cost.py --path /work/corpus  # any directory

Not a test: timings on shared machines are noisy.
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

from corpus import corpus_path


def measure(args: list[str], cwd: Path) -> tuple[float, float, str]:
    """(CPU seconds of the child, wall seconds, its output)."""
    before = os.times()
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "torchlint", "check", *args], cwd=cwd,
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return cpu, wall, proc.stdout + proc.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--path", help="directory to copy and fix (default: transformers 4.46.3 models/)")
    parser.add_argument("--select", default=None, help="rules (default: the default set)")
    args = parser.parse_args()
    source = Path(args.path) if args.path else corpus_path("transformers-models")
    common = ["--isolated", "--no-cache", "--exit-zero", "--no-respect-gitignore"]
    if args.select:
        common += ["--select", args.select]
    with tempfile.TemporaryDirectory(prefix="torchlint-fix-cost-") as tmp:
        work = Path(tmp) / "tree"
        shutil.copytree(source, work, ignore=shutil.ignore_patterns("_downloads", "_results", "_triage"))
        files = sum(1 for _ in work.rglob("*.py"))
        print(f"{source}: {files} files (copied to a temporary directory)")
        rows = []
        lint = measure([*common, "-q", "--output-format", "concise", "."], work)
        rows.append(("lint only", lint))
        diff = measure([*common, "--diff", "--unsafe-fixes", "."], work)
        rows.append(("--diff --unsafe-fixes", diff))
        fix = measure([*common, "--fix-only", "--unsafe-fixes", "--show-fixes", "."], work)
        rows.append(("--fix --unsafe-fixes", fix))
        again = measure([*common, "--fix-only", "--unsafe-fixes", "."], work)
        rows.append(("second --fix", again))
        changed = len(re.findall(r"^\+\+\+ b/", diff[2], re.M))
        fixed = re.search(r"Fixed (\d+) finding", fix[2])
        second = re.search(r"(Fixed (\d+) finding|No fixes to apply)", again[2])
        print(f"files changed: {changed}; fixes applied: {fixed.group(1) if fixed else 0}; "
              f"second run: {second.group(0) if second else '?'}")
        print(f"  {'run':<24}{'CPU s':>8}{'wall s':>8}{'CPU vs lint':>13}")
        for name, (cpu, wall, _) in rows:
            print(f"  {name:<24}{cpu:>8.2f}{wall:>8.2f}{cpu / lint[0]:>12.2f}x")


if __name__ == "__main__":
    main()
