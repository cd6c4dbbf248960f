"""Lint pinned real-world PyTorch code (transformers' models/, timm, torchvision) and print
findings per rule, with a sample of each default-on rule's findings for precision review.

    python benchmarks/corpus_report.py [--sample 20] [--rules TL101,TL102] [--all-rules] [--extra]
"""

from __future__ import annotations

import argparse
import random
from dataclasses import replace
from collections import Counter, defaultdict
from pathlib import Path

from corpus import CORPORA, EXTRA_CORPORA, corpus_path, python_files

from torchlint.api import CheckRequest, check
from torchlint.config import CliOverrides
from torchlint import catalog


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sample", type=int, default=20, help="findings to show per rule (default 20)")
    parser.add_argument("--rules", help="comma-separated codes to sample (default: every default-on rule)")
    parser.add_argument("--all-rules", action="store_true", help="lint with every rule, not just default-on")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--extra", action="store_true", help="also lint " + ", ".join(EXTRA_CORPORA))
    args = parser.parse_args()

    codes = frozenset(r.code for r in catalog.static_rules() if args.all_rules or r.default_enabled)
    overrides = CliOverrides(select=["ALL"] if args.all_rules else None)
    by_rule: dict[str, list] = defaultdict(list)
    per_corpus: dict[str, Counter] = {}
    total_files = 0
    corpora = [*CORPORA, *(EXTRA_CORPORA if args.extra else [])]
    for name in corpora:
        root = corpus_path(name)
        files = python_files(root)
        total_files += len(files)
        counts: Counter = Counter()
        # The files named one by one (no discovery, so no excludes): lint them as `check` does.
        request = CheckRequest([str(p) for p in files], overrides, isolated=True, no_cache=True, cwd=root,
                               notify=lambda line: print(line.replace("error:", "INTERNAL ERROR:", 1)))
        for f in check(request).findings:
            counts[f.code] += 1
            by_rule[f.code].append((replace(f, path=f"{name}/{f.path}"), root / f.path))
        per_corpus[name] = counts

    names = corpora
    print(f"Linted {total_files} files.\n")
    print(f"{'code':<7}{'name':<40}{'default':<9}" + "".join(f"{n:>22}" for n in names) + f"{'total':>8}")
    for rule in catalog.static_rules():
        if rule.code not in codes:
            continue
        row = [per_corpus[n][rule.code] for n in names]
        print(f"{rule.code:<7}{rule.name:<40}{'on' if rule.default_enabled else 'off':<9}"
              + "".join(f"{c:>22}" for c in row) + f"{sum(row):>8}")

    selected = args.rules.split(",") if args.rules else [r.code for r in catalog.static_rules() if r.default_enabled]
    rng = random.Random(args.seed)
    for code in selected:
        found = by_rule.get(code, [])
        if not found:
            continue
        sample = found if len(found) <= args.sample else rng.sample(found, args.sample)
        print(f"\n=== {code} {catalog.by_code()[code].name}: {len(sample)} of {len(found)} findings")
        for f, path in sorted(sample, key=lambda t: (t[0].path, t[0].row)):
            lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
            line = lines[f.row - 1].strip() if f.row <= len(lines) else ""
            print(f"{f.path}:{f.row}:{f.col}: {line[:140]}")


if __name__ == "__main__":
    main()
