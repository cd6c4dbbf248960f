"""Labels from independent triage rounds, for scoring other outputs against them mechanically
(e.g. `verify_corpus.py summary --labels`). A round is a directory of packets written by
`triage_packets.py` (one TLxxx.md per rule, each finding headed `### N. <project>/<path>[:cell C]:<line> ...`)
with the reviewer's answers in its `verdicts/` folder (`N. TRUE - why` / `N. FALSE - why` /
`N. UNSURE - why`, one line per finding, in the packet's numbering).

    python benchmarks/triage_labels.py ROUND [ROUND ...] --out labels.json [--reasons reasons.md]

Writes {"<project>/<path>[:cell C]:<line>:<code>": true|false}. UNSURE answers are left out. A finding
that two rounds answer differently is left out too, and listed, so that no label is a guess.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

HEADER = re.compile(r"^### (\d+)\. (\S+?(?::cell \d+)?):(\d+) ", re.MULTILINE)
ANSWER = re.compile(r"^\**(\d+)\.\**\s*\**(TRUE|FALSE|UNSURE)\b\**\s*[-—:]*\s*(.*)$", re.MULTILINE)


def round_answers(round_dir: Path) -> dict[str, tuple[bool, str]]:
    """{finding key: (is it true, the reviewer's reason)}, UNSURE answers left out."""
    answered: dict[str, tuple[bool, str]] = {}
    for answers in sorted((round_dir / "verdicts").glob("TL*.md")):
        code = answers.stem.split("-")[0]
        packet = round_dir / f"{code}.md"
        if not packet.is_file():
            continue
        where = {int(n): f"{path}:{line}:{code}" for n, path, line in HEADER.findall(packet.read_text())}
        for n, answer, why in ANSWER.findall(answers.read_text()):
            if answer != "UNSURE" and int(n) in where:
                answered[where[int(n)]] = (answer == "TRUE", why.strip())
    return answered


def round_labels(round_dir: Path) -> dict[str, bool]:
    return {key: truth for key, (truth, _) in round_answers(round_dir).items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("rounds", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--reasons", type=Path, help="also write each label with the reviewer's reason (Markdown), "
                        "to keep beside the labels where the packets, which quote third-party code, are not kept")
    args = parser.parse_args()
    merged: dict[str, bool] = {}
    reasons: dict[str, str] = {}
    disputed: set[str] = set()
    for round_dir in args.rounds:
        for key, (truth, why) in round_answers(round_dir).items():
            if key in merged and merged[key] != truth:
                disputed.add(key)
            merged.setdefault(key, truth)
            reasons.setdefault(key, why)
    for key in sorted(disputed):
        print(f"answered both ways, left out: {key}")
        del merged[key]
    args.out.write_text(json.dumps(merged, indent=1, sort_keys=True))
    if args.reasons:
        args.reasons.write_text("# Triage answers\n\n" + "".join(
            f"- `{key}`: {'TRUE' if merged[key] else 'FALSE'} - {reasons[key]}\n" for key in sorted(merged)))
    print(f"{len(merged)} labels ({sum(merged.values())} true) from {len(args.rounds)} rounds -> {args.out}")


if __name__ == "__main__":
    main()
