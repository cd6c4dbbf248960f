"""Labels from independent triage rounds, for scoring other outputs against them mechanically
(e.g. `verify_corpus.py summary --labels`). A round is a directory of packets written by
`triage_packets.py` (one TLxxx.md per rule, each finding headed `### N. <project>/<path>[:cell C]:<line> ...`)
with the reviewer's answers in its `verdicts/` folder (`N. TRUE - why` / `N. FALSE - why` /
`N. UNSURE - why`, one line per finding, in the packet's numbering).

    python benchmarks/triage_labels.py ROUND [ROUND ...] --out labels.json

Writes {"<project>/<path>[:cell C]:<line>:<code>": true|false}. UNSURE answers are left out. A finding
that two rounds answer differently is left out too, and listed, so that no label is a guess.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

HEADER = re.compile(r"^### (\d+)\. (\S+?(?::cell \d+)?):(\d+) ", re.MULTILINE)
ANSWER = re.compile(r"^\**(\d+)\.\**\s*\**(TRUE|FALSE|UNSURE)\b", re.MULTILINE)


def round_labels(round_dir: Path) -> dict[str, bool]:
    labels: dict[str, bool] = {}
    for answers in sorted((round_dir / "verdicts").glob("TL*.md")):
        code = answers.stem.split("-")[0]
        packet = round_dir / f"{code}.md"
        if not packet.is_file():
            continue
        where = {int(n): f"{path}:{line}:{code}" for n, path, line in HEADER.findall(packet.read_text())}
        for n, answer in ANSWER.findall(answers.read_text()):
            if answer != "UNSURE" and int(n) in where:
                labels[where[int(n)]] = answer == "TRUE"
    return labels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("rounds", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    merged: dict[str, bool] = {}
    disputed: set[str] = set()
    for round_dir in args.rounds:
        for key, truth in round_labels(round_dir).items():
            if key in merged and merged[key] != truth:
                disputed.add(key)
            merged.setdefault(key, truth)
    for key in sorted(disputed):
        print(f"answered both ways, left out: {key}")
        del merged[key]
    args.out.write_text(json.dumps(merged, indent=1, sort_keys=True))
    print(f"{len(merged)} labels ({sum(merged.values())} true) from {len(args.rounds)} rounds -> {args.out}")


if __name__ == "__main__":
    main()
