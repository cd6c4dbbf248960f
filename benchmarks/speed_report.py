"""Issue 23's figures in one run: the one-file, three-file and cache-hit start-up
(startup.py), the cold corpus against the `ast.parse` floor and peak RSS on 8 copies
(speed.py), the language server's edit-to-diagnostics latency (language_server_latency.py)
and `torchlint run`'s cost per training step (runtime_overhead.py). Each script's own output
is shown as it runs; a table of every figure against its target comes last.

    python benchmarks/speed_report.py               # ~10 minutes on 2 cores
    python benchmarks/speed_report.py --quick       # fewer repeats: a few minutes, noisier

Not a test: run it on an idle machine (the figures are CPU time, but a loaded machine still
slows every process). Each figure's own script is the command that reproduces it alone.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = ["--corpus", "transformers-models", "--no-scaling"]

# (figure, the command that prints it, a regular expression over its output, target or None)
FIGURES = [
    ("one file, cold (CPU ms)", "startup", r"check one file, cold\s+([\d.]+)", 40.0),
    ("warm: lint cache hit (CPU ms)", "startup", r"warm: lint cache hit\s+([\d.]+)", 30.0),
    ("warm: repeated (CPU ms)", "startup", r"warm: repeated\s+([\d.]+)", 30.0),
    ("hit among 1500 cached files (CPU ms)", "startup", r"hit among 1500 cached\s+([\d.]+)", 30.0),
    ("three files, cold (CPU ms)", "startup", r"check three files, cold\s+([\d.]+)", None),
    ("python -c pass (CPU ms)", "startup", r"python -c pass\s+([\d.]+)", None),
    ("ruff check one file (CPU ms)", "startup", r"ruff check one file\s+([\d.]+)", None),
    ("corpus cold / ast.parse floor", "floor", r"median ([\d.]+)x the floor", 1.8),
    ("corpus: ruff --select ALL / torchlint cold (CPU)", "floor", r"\n\s+ruff\b[^\n]*?\s([\d.]+)x\s+[\d.]+x\s+[\d.]+x\n", None),
    ("peak RSS, 8 copies / 1", "copies", r"ratio 8 copies / 1 copy: ([\d.]+)x", 1.3),
    ("server edit to diagnostics, median (ms)", "server", r"edit to diagnostics: median ([\d.]+) ms", 50.0),
    ("server edit to diagnostics, p95 (ms)", "server", r"edit to diagnostics: median [\d.]+ ms, p95 ([\d.]+) ms", None),
    ("torchlint run, tiny MLP (+ms/step)", "runtime", r"\+([\d.]+) ms/step \(target", 0.1),
]


def commands(quick: bool) -> dict[str, list[str]]:
    py = sys.executable
    return {
        "startup": [py, str(HERE / "startup.py"), "--runs", "15" if quick else "31"],
        "floor": [py, str(HERE / "speed.py"), *CORPUS, "--skip", "torchfix,flake8", "--floor-pairs", "3" if quick else "5"],
        "copies": [py, str(HERE / "speed.py"), *CORPUS, "--skip", "torchfix,flake8,ruff", "--copies", "8"],
        "server": [py, str(HERE / "language_server_latency.py"), "--edits", "30" if quick else "50"],
        "runtime": [py, str(HERE / "runtime_overhead.py"), "--repeat", "1"],
    }


def run(command: list[str]) -> str:
    """The command's output, shown as it comes and returned whole."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # users' bytecode is cached
    print(f"\n$ {' '.join(command)}", flush=True)
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        sys.stdout.write(line)
        lines.append(line)
    proc.wait()
    return "".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repeats of each measurement")
    args = parser.parse_args()
    outputs = {name: run(command) for name, command in commands(args.quick).items()}
    print(f"\n## issue 23, python {sys.version.split()[0]}, {os.cpu_count()} cores")
    print(f"  {'figure':<42}{'value':>9}{'target':>9}  verdict")
    for figure, source, pattern, target in FIGURES:
        found = re.search(pattern, outputs[source])
        if found is None:
            print(f"  {figure:<42}{'-':>9}{target if target is not None else '-':>9}  not measured ({source} printed none)")
            continue
        value = float(found.group(1))
        verdict = "-" if target is None else ("met" if value <= target else "missed")
        print(f"  {figure:<42}{value:>9.2f}{target if target is not None else '-':>9}  {verdict}")


if __name__ == "__main__":
    main()
