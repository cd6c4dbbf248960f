"""Lint pinned real-world PyTorch code (transformers' models/, timm, torchvision) and print
findings per rule, with a sample of each default-on rule's findings for precision review.

    python benchmarks/corpus_report.py [--sample 20] [--rules TL101,TL102] [--all-rules] [--extra]
"""

from __future__ import annotations

import argparse
import random
from collections import Counter, defaultdict
from pathlib import Path

from corpus import CORPORA, EXTRA_CORPORA, corpus_path, python_files

from torchlint.linter import FileTask, lint_task
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
    by_rule: dict[str, list] = defaultdict(list)
    per_corpus: dict[str, Counter] = {}
    total_files = 0
    corpora = [*CORPORA, *(EXTRA_CORPORA if args.extra else [])]
    for name in corpora:
        root = corpus_path(name)
        files = python_files(root)
        total_files += len(files)
        counts: Counter = Counter()
        for path in files:
            display = f"{name}/{path.relative_to(root).as_posix()}"
            result = lint_task(FileTask(path=str(path), display=display, codes=codes))
            if result.internal_error:
                print("INTERNAL ERROR:", result.internal_error)
            for f in result.findings:
                counts[f.code] += 1
                by_rule[f.code].append((f, path))
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
