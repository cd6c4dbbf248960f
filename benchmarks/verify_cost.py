"""Cost of `--verify` on a file with 50 findings, and on 5 files with 10 findings each:
plain lint vs --verify with a cold verdict cache vs --verify with a warm one. Prints wall
seconds and the overhead beyond linting (worker starts included).

The file defines its inputs, so most findings run as program slices of the file's own code;
the rest use fact probes. Each file gets a sandboxed process of its own, forked from one
worker that imports torch once, so the 5-file case shows what per-file isolation costs.
With a warm cache no worker starts.
--baseline runs the same against another checkout (`git worktree add /tmp/base02 00f712e`
for 0.2) and prints the ratios; CPU seconds are the figure to trust on a loaded machine.

--corpus DIR (repeatable) measures real projects instead: `torchlint check` run in each
project's root (so --verify may import the project), lint only, then --verify with a cold
and a warm cache. It prints the findings, the files they are in (each gets one process of
its own, forked from one worker: at most one start per file, plus the import), the verdicts
by `source` (your-code / probe / none) and the cost per finding beyond linting.

    python benchmarks/verify_cost.py [--device cpu|auto] [--baseline /path/to/0.2-checkout] [--repeat 3]
    python benchmarks/verify_cost.py --corpus /work/corpus2/minimalrl --corpus /work/corpus2/td3
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Optional

# 10 distinct hazards, repeated 5 times with small variations: 50 findings, several probes
# identical (same rule, same values), which --verify runs once.
BLOCK = '''
with torch.no_grad():
    loss{i} = model(x).sum()
    loss{i}.backward()
a{i} = torch.tensor([1, 2, {i}], requires_grad=True)
b{i} = torch.Tensor({n})
c{i} = F.cross_entropy(logits, labels.float())
d{i} = torch.from_numpy(np.random.rand({n}, 4))
for p in model.parameters():
    p.data.add_(0.{i})
ds{i} = DataLoader(ds, shuffle=True, sampler=sampler)
for x, y in loader:
    model(x).sum().backward()
    optimizer.step()
ckpt{i} = torch.load("model.pt")
e{i} = torch.zeros({n}).to(device)
'''
HEADER = """import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, RandomSampler

model = torch.nn.Linear(4, 3)
x = torch.randn(8, 4)
logits = torch.randn(8, 3)
labels = torch.randint(0, 3, (8,))
ds = list(range(8))
sampler = RandomSampler(ds)
loader = DataLoader([(torch.randn(4), 0)] * 4, batch_size=2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
device = "cpu"
"""


def timed(cmd: list[str], env: dict[str, str], cwd: Optional[Path] = None) -> tuple[float, float]:
    """Wall seconds and CPU seconds of the command and every process it waited for (the
    sandbox's processes are reaped by their parents, so their CPU is counted too): the CPU
    figure is the one that holds on a loaded machine."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, env=env, cwd=cwd)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _env(checkout: str) -> dict[str, str]:
    env = dict(os.environ)
    if checkout:
        env["PYTHONPATH"] = checkout
    return env


def measure(paths: list[Path], cache: Path, device: str, checkout: str, repeat: int) -> dict[str, tuple[float, float]]:
    """Median (wall, cpu) of lint only, --verify with a cold cache and with a warm one."""
    env = _env(checkout)
    base = [sys.executable, "-m", "torchlint", "check", *map(str, paths), "--isolated", "--exit-zero", "-q",
            "--output-format", "json"]
    findings = json.loads(subprocess.run(base + ["--no-cache"], capture_output=True, text=True, env=env).stdout)
    out = subprocess.run(base + ["--no-cache", "--verify", "--device", device], capture_output=True, text=True,
                         env=env).stdout
    kinds = Counter(f["verify"]["verdict"] for f in json.loads(out))
    print(f"  {checkout or 'this checkout'}: {len(findings)} findings in {len(paths)} file(s); verdicts: "
          + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
    runs: dict[str, list[tuple[float, float]]] = {"lint": [], "cold": [], "warm": []}
    for rep in range(repeat):
        where = ["--cache-dir", str(cache / f"{len(paths)}-{rep}")]
        runs["lint"].append(timed(base + ["--no-cache"], env))
        runs["cold"].append(timed(base + where + ["--verify", "--device", device], env))
        runs["warm"].append(timed(base + where + ["--verify", "--device", device], env))
    return {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in runs.items()}


def show(name: str, got: dict[str, tuple[float, float]], base: Optional[dict[str, tuple[float, float]]]) -> None:
    for kind, label in (("lint", "lint only"), ("cold", "--verify, cold cache"), ("warm", "--verify, warm cache")):
        wall, cpu = got[kind]
        line = f"  {name:9} {label:22} {wall:7.2f} s wall {cpu:7.2f} s CPU"
        if base is not None:
            line += f"   {wall / base[kind][0]:5.2f}x wall {cpu / base[kind][1]:5.2f}x CPU of the baseline"
        print(line)


def corpus(project: Path, cache: Path, device: str, save: Optional[Path] = None, select: str = "") -> None:
    """One real project: lint, then --verify cold and warm, run in the project's root;
    `save`: a directory to write the cold run's JSON to (to diff verdicts between checkouts)."""
    env = _env("")
    base = [sys.executable, "-m", "torchlint", "check", ".", "--exit-zero", "-q", "--output-format", "json",
            *(["--select", select] if select else [])]
    lint = timed(base + ["--no-cache"], env, project)
    where = ["--cache-dir", str(cache / project.name)]
    before = time.perf_counter()
    out = subprocess.run(base + where + ["--verify", "--device", device], capture_output=True, text=True, env=env,
                         cwd=project).stdout
    cold = time.perf_counter() - before
    if save is not None:
        save.mkdir(parents=True, exist_ok=True)
        (save / f"{project.name}.json").write_text(out)
    warm = timed(base + where + ["--verify", "--device", device], env, project)
    found = [f for f in json.loads(out or "[]") if f.get("verify")]
    files = {f["filename"] for f in found}
    by_source = Counter(f["verify"]["source"] for f in found)
    kinds = Counter(f"{f['verify']['verdict']}/{f['verify']['source']}" for f in found)
    per = (cold - lint[0]) / len(found) if found else 0.0
    print(f"{project.name}: {len(found)} findings in {len(files)} files; sources: "
          + ", ".join(f"{k} {v}" for k, v in sorted(by_source.items())))
    print("  verdicts: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
    print(f"  lint {lint[0]:.2f} s wall; --verify cold {cold:.2f} s wall ({per:.2f} s per finding beyond "
          f"linting); warm {warm[0]:.2f} s wall")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", default="cpu", choices=["cpu", "auto", "cuda"])
    parser.add_argument("--baseline", default="", help="another checkout (e.g. a worktree of 0.2) to compare with")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each measurement; medians are shown")
    parser.add_argument("--corpus", action="append", default=[], type=Path,
                        help="a real project's root (repeatable): measure it instead of the built-in files")
    parser.add_argument("--select", default="", help="with --corpus: the rules to check (e.g. ALL); default: the project's")
    parser.add_argument("--save", type=Path, default=None,
                        help="with --corpus: write each project's cold --verify JSON into this directory")
    args = parser.parse_args()
    if args.corpus:
        with tempfile.TemporaryDirectory() as tmp:
            for project in args.corpus:
                corpus(project.resolve(), Path(tmp), args.device, args.save, args.select)
        return
    with tempfile.TemporaryDirectory() as tmp:
        one = Path(tmp) / "fifty.py"
        one.write_text(HEADER + "".join(BLOCK.format(i=i, n=3 + i % 2) for i in range(5)))
        many = []
        for i in range(5):  # the same hazards, but each file's requests differ (other values)
            path = Path(tmp) / f"part{i}.py"
            path.write_text(HEADER + BLOCK.format(i=i + 10, n=5 + i))
            many.append(path)
        for title, paths in (("1 file, 50 findings", [one]), ("5 files, 10 findings each", many)):
            print(title)
            base = measure(paths, Path(tmp) / "base", args.device, args.baseline, args.repeat) \
                if args.baseline else None
            got = measure(paths, Path(tmp) / "cache", args.device, "", args.repeat)
            if base is not None:
                show("baseline", base, None)
            show("this", got, base)


if __name__ == "__main__":
    main()
