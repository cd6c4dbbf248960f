"""Triage packets (issue 18, point 5): one Markdown file per rule code for a reviewer who did
not write the rule, holding only the rule's doc, the definition of a true finding, and the code
around each finding; plus INDEX.md with the counts.

    python benchmarks/training_corpus.py report --set heldout-2026-12 --root R --json-dir J
    python benchmarks/triage_packets.py --json-dir J --out DIR

Which findings go in a packet: for default-on rules of families 1-5 and 7 (the correctness
rules), every finding, up to --full-limit (100); beyond that, and for every other rule, a
random sample of --sample-limit (20) or --full-limit, drawn with a fixed --seed so the same
report gives the same packets. Default-on rules are taken from the default run, others from
the --select ALL run. The code shown is the enclosing function (up to --max-lines, centred on
the finding when longer) or, at module level, ±25 lines; for a notebook, the same within the
finding's cell.
"""

from __future__ import annotations

import argparse
import ast
import json
import random
from collections import Counter, defaultdict
from pathlib import Path

from torchlint import catalog

REPO = Path(__file__).resolve().parent.parent
CORRECTNESS_FAMILIES = frozenset("123457")  # TL1xx-TL5xx, TL7xx
MODULE_CONTEXT = 25  # lines either side of a module-level finding

DEFINITION = """A finding is **true** only if the hazard its message names can happen on the code path
shown, and a careful reviewer would change the line. A message that is literally true where
nothing is at risk is **false**. A message that states something untrue about torch is **false**."""


def is_full_rule(code: str, default_on: dict[str, bool]) -> bool:
    return default_on.get(code, False) and code[2] in CORRECTNESS_FAMILIES


def choose(findings: list[dict], limit: int, seed: int, code: str) -> list[dict]:
    """All findings when they fit, else a seeded sample; in file order either way."""
    ordered = sorted(findings, key=_order)
    if len(ordered) <= limit:
        return ordered
    return sorted(random.Random(f"{seed}:{code}").sample(ordered, limit), key=_order)


def _order(f: dict) -> tuple:
    return f["filename"], f.get("cell") or 0, f["location"]["row"], f["location"]["column"]


# --------------------------------------------------------------------------- code excerpts

def _cell_lines(notebook: Path, number: int) -> list[str]:
    """The source lines of cell `number` (1-based, counting every cell, as torchlint does)."""
    data = json.loads(notebook.read_text(encoding="utf-8"))
    cells = [c for ws in data["worksheets"] for c in ws.get("cells", [])] if "worksheets" in data \
        else data.get("cells", [])
    cell = cells[number - 1]
    source = cell.get("source", cell.get("input", ""))
    return ("".join(source) if isinstance(source, list) else str(source)).splitlines()


def enclosing_span(lines: list[str], row: int) -> tuple[int, int] | None:
    """(first, last) 1-based rows of the innermost function around `row`, decorators
    included; None at module level or when the text does not parse."""
    # IPython escapes (`%time`, `!pip`) do not parse: blank them, keeping the rows.
    code = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in lines)
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return None
    best = None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            last = node.end_lineno or node.lineno
            if first <= row <= last and (best is None or first >= best[0]):
                best = (first, last)
    return best


def excerpt(lines: list[str], row: int, end_row: int, max_lines: int) -> str:
    """Numbered lines around the finding; the flagged rows are marked `>>`."""
    span = enclosing_span(lines, row)
    first, last = span if span else (row - MODULE_CONTEXT, row + MODULE_CONTEXT)
    if last - first + 1 > max_lines:  # centre a window on the finding, inside the span
        first = max(first, row - max_lines // 2)
        last = min(last, first + max_lines - 1)
        first = max(span[0] if span else 1, last - max_lines + 1)
    first, last = max(first, 1), min(last, len(lines))
    width = len(str(last))
    out = []
    for n in range(first, last + 1):
        mark = ">>" if row <= n <= max(row, end_row) else "  "
        out.append(f"{mark} {n:>{width}} | {lines[n - 1]}".rstrip())
    body = "\n".join(out)
    fence = "```"
    while fence in body:
        fence += "`"
    return f"{fence}python\n{body}\n{fence}"


def finding_block(n: int, f: dict, root: Path, max_lines: int) -> str:
    path = Path(f["filename"]).resolve()
    rel = path.relative_to(root).as_posix()
    row, end_row = f["location"]["row"], (f.get("end_location") or f["location"])["row"]
    where = f"{rel}:cell {f['cell']}:{row}" if f.get("cell") else f"{rel}:{row}"
    try:
        if f.get("cell"):
            lines = _cell_lines(path, f["cell"])
        else:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        code = excerpt(lines, row, end_row, max_lines)
    except (OSError, ValueError, KeyError, IndexError) as exc:
        code = f"(source not available: {exc})"
    return f"### {n}. {where} {f['message']}\n\n{code}\n"


# --------------------------------------------------------------------------- packets

def rule_doc(docs: Path, code: str) -> str:
    found = sorted(docs.glob(f"{code}-*.md"))
    return found[0].read_text(encoding="utf-8").strip() if found else f"(no rules_docs/{code}-*.md)"


def write_packets(json_dir: Path, out: Path, docs: Path, seed: int, full_limit: int, sample_limit: int,
                  max_lines: int) -> None:
    meta = json.loads((json_dir / "report.json").read_text())
    root = Path(meta["root"]).resolve()
    runs = {label: json.loads((json_dir / f"findings-{label}.json").read_text()) for label in ("default", "ALL")}
    default_on = {r.code: r.default_enabled for r in catalog.static_rules()}
    by_code: dict[str, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for label, findings in runs.items():
        for f in findings:
            by_code[f["code"]][label].append(f)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for code in sorted(by_code):
        full = is_full_rule(code, default_on)
        pool = by_code[code]["default"] if default_on.get(code) else by_code[code]["ALL"]
        chosen = choose(pool, full_limit if full else sample_limit, seed, code)
        how = ("every finding" if len(chosen) == len(pool) else
               f"{len(chosen)} of {len(pool)} findings, drawn at random (seed {seed})")
        parts = [f"# Triage packet {code}\n",
                 f"Corpus `{meta['set']}`; {how}; {'default-on' if default_on.get(code) else 'off by default'}.\n",
                 "## Definition of a true finding\n", DEFINITION + "\n", "## The rule's documentation\n",
                 rule_doc(docs, code) + "\n", "## Findings\n"]
        parts += [finding_block(n, f, root, max_lines) for n, f in enumerate(chosen, 1)]
        (out / f"{code}.md").write_text("\n".join(parts), encoding="utf-8")
        projects = Counter(Path(f["filename"]).resolve().relative_to(root).parts[0] for f in pool)
        rows.append((code, by_code[code], len(chosen), default_on.get(code), full, projects))
    (out / "INDEX.md").write_text(index(meta, rows, runs, root), encoding="utf-8")


def index(meta: dict, rows: list, runs: dict[str, list[dict]], root: Path) -> str:
    timing = meta["timing"]
    lines = [f"# Triage packets: corpus `{meta['set']}`\n",
             f"torchlint {meta.get('torchlint', '?')}; {len(meta['projects'])} projects, "
             f"{sum(p['files'] for p in meta['projects'])} files linted "
             f"(notebooks: {meta['notebooks']}). Lint, 1 job, no cache: default rules "
             f"{timing['default']['wall_s']} s wall / {timing['default']['cpu_s']} s CPU; --select ALL "
             f"{timing['ALL']['wall_s']} s wall / {timing['ALL']['cpu_s']} s CPU.\n",
             "Packet rule: default-on rules of families 1-5 and 7 hold every finding up to 100; the others "
             "a seeded random sample of up to 20. `in packet` counts the findings each packet holds.\n",
             "| code | name | default-on | default run | --select ALL | in packet | projects (findings) |",
             "|---|---|---|---|---|---|---|"]
    for code, found, chosen, on, full, projects in rows:
        name = (found["ALL"] or found["default"])[0]["name"]
        spread = ", ".join(f"{p} {n}" for p, n in projects.most_common())
        lines.append(f"| [{code}]({code}.md) | {name} | {'yes' if on else 'no'}{' (all)' if full else ''} | "
                     f"{len(found['default'])} | {len(found['ALL'])} | {chosen} | {spread} |")
    lines.append(f"| total | | | {len(runs['default'])} | {len(runs['ALL'])} | {sum(r[2] for r in rows)} | |\n")
    per_project: dict[str, Counter] = defaultdict(Counter)
    for f in runs["ALL"]:
        per_project[Path(f["filename"]).resolve().relative_to(root).parts[0]][f["code"]] += 1
    lines += ["## Projects (--select ALL findings)\n",
              "| project | category | source | subtree | files | findings | by rule |", "|---|---|---|---|---|---|---|"]
    for p in meta["projects"]:
        found = per_project[p["name"]]
        detail = ", ".join(f"{c} {n}" for c, n in sorted(found.items()))
        lines.append(f"| {p['name']} | {p['category']} | `{p['source']}` | {' '.join(p['subdirs']) or '(all)'} | "
                     f"{p['files']} | {sum(found.values())} | {detail} |")
    lines.append("\n## Files torchlint could not read or parse (TL000), rule crashes (TL020)\n")
    lines += [f"- {f['code']} {Path(f['filename']).resolve().relative_to(root)}"
              f"{':cell ' + str(f['cell']) if f.get('cell') else ''}:{f['location']['row']}: {f['message']}"
              for f in meta["unreadable"]] or ["none"]
    lines.append("\n## Files `prepare` could not bring (over the snapshot's 4 MiB file limit, broken JSON)\n")
    lines += [f"- {name}/{entry}" for name, entries in meta.get("not_prepared", {}).items() for entry in entries] \
        or ["none"]
    lines.append("\n## Files on disk that torchlint did not lint (default excludes)\n")
    lines += [f"- {p}" for p in meta["not_linted"]] or ["none"]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json-dir", type=Path, required=True,
                        help="where `training_corpus.py report --json-dir` wrote report.json and findings-*.json")
    parser.add_argument("--out", type=Path, required=True, help="directory for <code>.md and INDEX.md")
    parser.add_argument("--rules-docs", type=Path, default=REPO / "rules_docs")
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument("--full-limit", type=int, default=100)
    parser.add_argument("--sample-limit", type=int, default=20)
    parser.add_argument("--max-lines", type=int, default=80)
    args = parser.parse_args()
    for name in ("report.json", "findings-default.json", "findings-ALL.json"):
        if not (args.json_dir / name).is_file():
            raise SystemExit(f"{args.json_dir / name}: missing (run training_corpus.py report --json-dir first)")
    write_packets(args.json_dir, args.out, args.rules_docs, args.seed, args.full_limit, args.sample_limit,
                  args.max_lines)


if __name__ == "__main__":
    main()
