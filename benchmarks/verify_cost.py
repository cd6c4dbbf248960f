"""Cost of `--verify` on a file with 50 findings, and on 5 files with 10 findings each:
plain lint vs --verify with a cold verdict cache vs --verify with a warm one. Prints wall
seconds and the overhead beyond linting (worker starts included).

The file defines its inputs, so most findings run as program slices of the file's own code;
the rest use fact probes. Each file gets a fresh sandboxed worker (one start per file), so
the 5-file case shows what per-file isolation costs. With a warm cache no worker starts.
Run it against another checkout with PYTHONPATH=/path/to/checkout for a baseline.

    python benchmarks/verify_cost.py [--device cpu|auto]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

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


def timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def measure(paths: list[Path], cache: Path, device: str) -> None:
    base = [sys.executable, "-m", "torchlint", "check", *map(str, paths), "--isolated", "--exit-zero", "-q",
            "--output-format", "json", "--cache-dir", str(cache)]
    out = subprocess.run(base + ["--no-cache"], capture_output=True, text=True).stdout
    findings = json.loads(out)
    print(f"{len(findings)} findings in {len(paths)} file(s)")
    out = subprocess.run(base + ["--no-cache", "--verify", "--device", device], capture_output=True,
                         text=True).stdout
    kinds = Counter(f["verify"]["verdict"] for f in json.loads(out))
    print("  verdicts: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
    lint = timed(base + ["--no-cache"])
    cold = timed(base + ["--verify", "--device", device])
    warm = timed(base + ["--verify", "--device", device])
    print(f"  lint only              {lint:7.2f} s")
    print(f"  --verify, cold cache   {cold:7.2f} s   overhead {cold - lint:6.2f} s "
          f"({(cold - lint) / len(findings):.3f} s per finding)")
    print(f"  --verify, warm cache   {warm:7.2f} s   overhead {warm - lint:6.2f} s")



def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", default="cpu", choices=["cpu", "auto", "cuda"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        one = Path(tmp) / "fifty.py"
        one.write_text(HEADER + "".join(BLOCK.format(i=i, n=3 + i % 2) for i in range(5)))
        measure([one], Path(tmp) / "cache1", args.device)
        many = []
        for i in range(5):  # the same hazards, but each file's requests differ (other values)
            path = Path(tmp) / f"part{i}.py"
            path.write_text(HEADER + BLOCK.format(i=i + 10, n=5 + i))
            many.append(path)
        measure(many, Path(tmp) / "cache5", args.device)


if __name__ == "__main__":
    main()
