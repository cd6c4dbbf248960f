"""`--verify` over a whole corpus (issue 19): where each verdict's evidence came from, per rule,
and whether any run aborted. Each project is checked from its own root (so the worker imports
the project as its program would), with every rule selected, notebooks linted natively.

Run it with a Python that has the projects' own dependencies beside torch
(verify_corpus_requirements.txt), as the user's would: without them most imports fail.

    python benchmarks/verify_corpus.py run --root /work/corpus2 --out /tmp/v54 [--parallel 2] [--only a,b]
    python benchmarks/verify_corpus.py summary --out /tmp/v54 [--labels labels.json]
    python benchmarks/verify_corpus.py packets --out /tmp/v54 --labels labels.json --packets DIR

`run` writes OUT/<project>.json (the findings with their `verify` objects) and OUT/<project>.meta.json
(exit code, seconds, the end of stderr). A run that exits with anything but 0, or prints a
traceback, is an abort. `summary` prints, for rules that have a probe, the share of verdicts whose
source is `your-code`, for the default-on rules and for all, and the verdicts by rule.

--labels takes a JSON object {"<project>/<path>[:cell C]:<line>:<code>": true|false} from an independent
triage (is the finding true?) and counts wrong verdicts: `confirmed`/`demonstrated` on a false
finding, `not-reproduced`/`not-applicable` on a true one.

`packets` writes triage packets (triage_packets.py's format: the rule's doc, the definition of
a true finding, the code) of every finding whose verdict claims something (confirmed,
demonstrated, not-reproduced, not-applicable) and that --labels does not answer yet. The
packets do not show the verdicts: the reviewer judges the finding, and the verdict is scored
against that answer.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from torchlint import catalog

FLAGS = ["--isolated", "--no-respect-gitignore", "--extend-exclude", "_nb", "--select", "ALL",
         "--output-format", "json", "--exit-zero", "-q", "--verify", "--device", "cpu"]
POSITIVE, NEGATIVE = {"confirmed", "demonstrated"}, {"not-reproduced", "not-applicable"}


def run_project(project: Path, out: Path, timeout: int) -> str:
    cmd = [sys.executable, "-m", "torchlint", "check", ".", *FLAGS, "--cache-dir", str(out / "cache" / project.name)]
    start = time.perf_counter()
    try:
        done = subprocess.run(["nice", "-n", "5", *cmd], cwd=project, capture_output=True, text=True, timeout=timeout)
        rc, stdout, stderr = done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired as exc:
        rc, stdout, stderr = -1, "", f"timed out after {timeout} s; {exc.stderr or ''}"
    wall = time.perf_counter() - start
    (out / f"{project.name}.json").write_text(stdout or "[]")
    meta = {"rc": rc, "wall_s": round(wall, 1), "stderr": (stderr or "")[-3000:]}
    (out / f"{project.name}.meta.json").write_text(json.dumps(meta, indent=1))
    return f"{project.name}: rc {rc}, {wall:.0f} s"


def run(args: argparse.Namespace) -> None:
    args.out.mkdir(parents=True, exist_ok=True)
    only = set(args.only.split(",")) if args.only else None
    projects = sorted(p for p in args.root.iterdir() if p.is_dir() and (only is None or p.name in only))
    if not args.redo:
        projects = [p for p in projects if not (args.out / f"{p.name}.meta.json").is_file()]
    with ThreadPoolExecutor(args.parallel) as pool:
        for line in pool.map(lambda p: run_project(p, args.out, args.timeout), projects):
            print(line, flush=True)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"children CPU {usage.ru_utime + usage.ru_stime:.0f} s")


def load(out: Path) -> tuple[list[dict], dict[str, dict]]:
    findings, metas = [], {}
    for meta_path in sorted(out.glob("*.meta.json")):
        name = meta_path.name[: -len(".meta.json")]
        metas[name] = json.loads(meta_path.read_text())
        for f in json.loads((out / f"{name}.json").read_text() or "[]"):
            f["project"] = name
            findings.append(f)
    return findings, metas


def key(f: dict, root: Path) -> str:
    path = Path(f["filename"])  # absolute, under root/<project>
    rel = path.relative_to(root).as_posix() if path.is_relative_to(root) else f"{f['project']}/{path.as_posix()}"
    cell = f":cell {f['cell']}" if f.get("cell") is not None else ""
    return f"{rel}{cell}:{f['location']['row']}:{f['code']}"


def share(findings: list[dict], title: str) -> None:
    total = len(findings)
    mine = sum(1 for f in findings if f["verify"]["source"] == "your-code")
    print(f"{title}: {mine}/{total} your-code ({100 * mine / total if total else 0:.0f}%)")


def summary(args: argparse.Namespace) -> None:
    findings, metas = load(args.out)
    aborts = {n: m for n, m in metas.items() if m["rc"] != 0 or "Traceback" in m["stderr"]}
    print(f"{len(metas)} projects, {len(findings)} findings; aborted runs: {len(aborts)}")
    for name, m in sorted(aborts.items()):
        print(f"  {name}: rc {m['rc']}: {m['stderr'].strip().splitlines()[-1:] or ''}")
    probed = {r.code for r in catalog.static_rules() if r.evidence is not None and r.evidence.probe is not None}
    default_on = {r.code for r in catalog.static_rules() if r.default_enabled}
    with_probe = [f for f in findings if f["code"] in probed and f.get("verify")]
    share([f for f in with_probe if f["code"] in default_on], "default-on rules with a probe")
    share(with_probe, "all rules with a probe")
    by_rule: dict[str, Counter] = defaultdict(Counter)
    for f in with_probe:
        by_rule[f["code"]][f"{f['verify']['verdict']}/{f['verify']['source']}"] += 1
    print(f"\n{'code':<7}{'on':<4}{'total':>6}{'mine':>6}  verdict/source")
    for code in sorted(by_rule):
        got = by_rule[code]
        mine = sum(n for k, n in got.items() if k.endswith("/your-code"))
        print(f"{code:<7}{'y' if code in default_on else '':<4}{sum(got.values()):>6}{mine:>6}  "
              + ", ".join(f"{k} {n}" for k, n in sorted(got.items())))
    if args.labels:
        judge(with_probe, json.loads(args.labels.read_text()), args.root.resolve())


def judge(findings: list[dict], labels: dict[str, bool], root: Path) -> None:
    seen, wrong, kinds = 0, [], Counter()
    for f in findings:
        truth = labels.get(key(f, root))
        if truth is None:
            continue
        seen += 1
        verdict = f["verify"]["verdict"]
        kinds[f"{'true' if truth else 'false'} finding: {verdict}/{f['verify']['source']}"] += 1
        if (verdict in POSITIVE and not truth) or (verdict in NEGATIVE and truth):
            wrong.append((key(f, root), truth, verdict, f["verify"]["source"]))
    print(f"\ntriaged findings with a verdict: {seen}; wrong verdicts: {len(wrong)}")
    for kind, n in sorted(kinds.items()):
        print(f"  {kind}: {n}")
    for k, truth, verdict, source in wrong:
        print(f"  {k}: finding {'true' if truth else 'false'}, verdict {verdict} ({source})")


def packets(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import triage_packets

    findings, _ = load(args.out)
    root = args.root.resolve()
    labels = json.loads(args.labels.read_text()) if args.labels else {}
    open_ones: dict[str, list[dict]] = defaultdict(list)
    for f in findings:
        if f.get("verify") and f["verify"]["verdict"] in POSITIVE | NEGATIVE and key(f, root) not in labels:
            open_ones[f["code"]].append(f)
    args.packets.mkdir(parents=True, exist_ok=True)
    docs = Path(__file__).resolve().parent.parent / "rules_docs"
    for code, chosen in sorted(open_ones.items()):
        parts = [f"# Triage packet {code}\n", f"Corpus `{root.name}`: every finding of this rule that --verify "
                 "gave a verdict on and no earlier triage answered.\n", "## Definition of a true finding\n",
                 triage_packets.DEFINITION + "\n", "## The rule's documentation\n",
                 triage_packets.rule_doc(docs, code) + "\n", "## Findings\n"]
        parts += [triage_packets.finding_block(n, f, root, 60) for n, f in enumerate(chosen, 1)]
        (args.packets / f"{code}.md").write_text("\n".join(parts), encoding="utf-8")
        print(f"{code}: {len(chosen)} findings -> {args.packets / f'{code}.md'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--root", type=Path, required=True)
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--parallel", type=int, default=1)
    r.add_argument("--timeout", type=int, default=1800, help="seconds per project")
    r.add_argument("--only", default="", help="comma-separated project names")
    r.add_argument("--redo", action="store_true", help="run projects that already have a result again")
    s = sub.add_parser("summary")
    s.add_argument("--out", type=Path, required=True)
    s.add_argument("--root", type=Path, default=Path("/work/corpus2"))
    s.add_argument("--labels", type=Path)
    k = sub.add_parser("packets")
    k.add_argument("--out", type=Path, required=True)
    k.add_argument("--root", type=Path, default=Path("/work/corpus2"))
    k.add_argument("--labels", type=Path)
    k.add_argument("--packets", type=Path, required=True)
    args = parser.parse_args()
    {"run": run, "summary": summary, "packets": packets}[args.command](args)


if __name__ == "__main__":
    main()
