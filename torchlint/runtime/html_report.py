"""`torchlint run --report report.html`: one self-contained page (inline SVG and CSS, no script,
nothing fetched: its Content-Security-Policy forbids it) with the findings and their evidence,
and what the monitors recorded: per-step loss, gradient norm and learning rate per parameter
group (runtime/recorder.py), the DataLoader workers' random streams side by side, the first
non-finite value, the crash, and the regions torch.compile ran unmonitored. Pure data; no torch."""

from __future__ import annotations

import math
from html import escape
from pathlib import Path

from torchlint.diagnostics import Finding
from torchlint.runtime.judging import Observation, where
from torchlint.runtime.svg_chart import Line, chart
from torchlint.safe_io import display_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Iterable, Optional
    from torchlint.runtime.judging import Event

CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px; color: #1a1a1a; background: #ffffff; max-width: 1060px; }
h1 { font-size: 22px; } h2 { font-size: 17px; margin-top: 28px; border-bottom: 1px solid #dddddd; }
table { border-collapse: collapse; width: 100%; } td, th { border: 1px solid #dddddd; padding: 4px 6px;
 vertical-align: top; text-align: left; } th { background: #f4f4f4; }
code { font: 12px ui-monospace, monospace; } .dim { color: #777777; } .tick { font: 11px sans-serif; fill: #555555; }
.verdict { font-weight: 600; padding: 1px 5px; border-radius: 3px; white-space: nowrap; }
.confirmed { background: #fde0dc; color: #8a1c10; } .not-observed { background: #e3f1e3; color: #205020; }
.not-reached, .not-monitored { background: #eeeeee; color: #555555; }
.legend { list-style: none; padding: 0; margin: 4px 0 12px 0; } .legend li { display: inline-block; margin-right: 16px; }
.swatch { display: inline-block; width: 12px; height: 12px; margin-right: 5px; vertical-align: -1px; }
.same { background: #fff0c2; } .note { background: #f3f6fb; border-left: 4px solid #5b7fb8; padding: 6px 10px; }
"""
CSP = "default-src 'none'; style-src 'unsafe-inline'"
DRAWS_SHOWN = 4


def render_html(findings: list[Finding], obs: Observation, cwd: Path, command: str, status: str) -> str:
    sections = [_summary(command, status, obs, cwd), _findings(findings), _series(obs, cwd), _nonfinite(obs, cwd),
                _workers(obs, cwd), _crashes(obs, cwd)]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">"
            f"<title>torchlint run: {escape(command)}</title><style>{CSS}</style></head><body>"
            f"{''.join(sections)}</body></html>\n")


def _summary(command: str, status: str, obs: Observation, cwd: Path) -> str:
    notes = [f'<p class="note">{escape(line)}</p>' for line in compile_notes(obs, cwd)]
    return (f"<h1>torchlint run: <code>{escape(command)}</code></h1>"
            + "".join(f"<p>{escape(line)}</p>" for line in status.splitlines() if line) + "".join(notes))


def compile_notes(obs: Observation, cwd: Path) -> list[str]:
    """What the report must say about torch.compile: its regions ran without the monitors."""
    seen: dict[tuple, Event] = {}
    for e in obs.by_kind["compile"]:
        seen.setdefault(tuple(e["site"][:2]) if e.get("site") else (), e)
    notes = []
    for e in seen.values():
        what = f"`{e['target']}`" if e.get("target") else "a function"
        how = ", fullgraph=True" if e.get("fullgraph") else ""
        notes.append(f"torch.compile({what}{how}) at {where(e.get('site'), cwd)}: the compiled region ran without the "
                     "monitors; what happens inside it is judged only at its boundary (its inputs, outputs, "
                     "the loss and the optimizer step outside it)")
    return notes


def _findings(findings: list[Finding]) -> str:
    if not findings:
        return "<h2>Findings</h2><p>No findings.</p>"
    rows = []
    for f in findings:
        verdict = f.runtime.verdict if f.runtime else "static"
        evidence = escape(f.runtime.evidence) if f.runtime else ""
        rows.append(f'<tr class="finding" data-code="{escape(f.code)}"><td><code>{escape(f.code)}</code></td>'
                    f"<td><code>{escape(f.path)}:{f.row}</code></td><td>{escape(f.message)}</td>"
                    f'<td><span class="verdict {escape(verdict)}">{escape(verdict)}</span></td><td>{evidence}</td></tr>')
    return (f"<h2>Findings ({len(findings)})</h2><table><tr><th>code</th><th>where</th><th>finding</th>"
            f"<th>run</th><th>evidence</th></tr>{''.join(rows)}</table>")


def _site_text(label: str, cwd: Path) -> str:
    """`/abs/train.py:40` as the user's relative path."""
    path, _, row = label.rpartition(":")
    return f"{display_path(Path(path), cwd)}:{row}" if path else label


def _number(value: Any) -> Optional[float]:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def series_lines(obs: Observation, cwd: Path) -> tuple[list[Line], list[Line], list[Line]]:
    """(loss per backward site, gradient norm per group, learning rate per group) from the
    `series` events, one line per process and site (ranks named when there are several)."""
    events = sorted(obs.by_kind["series"], key=lambda e: (e.get("rank", 0), e.get("pid", 0), e["step"]))
    several = len({(e.get("rank"), e.get("pid")) for e in events}) > 1
    losses: dict[tuple, Line] = {}
    norms: dict[tuple, Line] = {}
    rates: dict[tuple, Line] = {}
    for e in events:
        who = f"rank {e.get('rank', 0)} (pid {e.get('pid')}): " if several else ""
        process = (e.get("rank"), e.get("pid"))
        for site, value in (e.get("loss") or {}).items():
            number = _number(value)
            if number is not None:
                losses.setdefault((process, site), Line(f"{who}loss at {_site_text(site, cwd)}")).points.append(
                    (e["step"], number))
        step_site = where(e.get("site"), cwd)
        groups = e.get("groups") or []
        for index, label in enumerate(groups):
            key = (process, step_site, index)
            name = f"{who}{e.get('optimizer')} at {step_site}, {label}"
            for table, values in ((norms, e.get("grad_norm") or []), (rates, e.get("lr") or [])):
                number = _number(values[index]) if index < len(values) else None
                if number is not None:
                    table.setdefault(key, Line(name)).points.append((e["step"], number))
    return list(losses.values()), list(norms.values()), list(rates.values())


def _first_nonfinite(obs: Observation) -> Optional[Event]:
    events = obs.by_kind["nonfinite"]
    return min(events, key=lambda e: e.get("step", 0)) if events else None


def _series(obs: Observation, cwd: Path) -> str:
    losses, norms, rates = series_lines(obs, cwd)
    first = _first_nonfinite(obs)
    marker = (first["step"] + 1, f"first NaN/Inf (step {first['step'] + 1})") if first else None
    parts = ["<h2>Training</h2>"]
    if not (losses or norms or rates):
        return parts[0] + "<p>No optimizer step ran under the monitors: nothing to plot.</p>"
    for title, lines, chart_id, offset in (("Loss per step", losses, "loss-chart", 0),
                                           ("Gradient norm per parameter group", norms, "grad-norm-chart", 1),
                                           ("Learning rate per parameter group", rates, "lr-chart", 2)):
        drawn = chart(lines, chart_id, offset, marker)
        parts.append(f"<h3>{title}</h3>" + (drawn or "<p class=\"dim\">not recorded</p>"))
    return "".join(parts)


def _nonfinite(obs: Observation, cwd: Path) -> str:
    e = _first_nonfinite(obs)
    if e is None:
        return ""
    rows = [("step", str(e.get("step", 0) + 1)), ("where", str(e.get("where"))), ("line", where(e.get("site"), cwd))]
    if e.get("where") == "activation":
        module = f"{e.get('name')} ({e.get('module')})" if e.get("name") else str(e.get("module"))
        rows += [("module", module), ("output", _describe(e.get("output"))),
                 ("inputs", "finite" if e.get("inputs_finite") else "already non-finite")]
        if e.get("bad_params"):
            rows.append(("non-finite parameters", ", ".join(e["bad_params"])))
    elif e.get("where") == "loss":
        rows.append(("value", str(e.get("value"))))
    else:
        rows += [("parameter", str(e.get("name"))), ("gradient", _describe(e.get("tensor")))]
    masked = e.get("masked_inf")
    if masked:
        rows.append(("earlier -inf (a mask?)", f"{masked.get('name') or masked.get('module')} at "
                                               f"{where(masked.get('site'), cwd)}, step {masked.get('step', 0) + 1}"))
    return "<h2 id=\"nonfinite\">First non-finite value</h2>" + _table(rows)


def _describe(desc: Any) -> str:
    if not isinstance(desc, dict):
        return "?"
    return f"{tuple(desc.get('shape') or ())} {desc.get('dtype')} on {desc.get('device')}"


def _table(rows: Iterable[tuple[str, str]]) -> str:
    return "<table>" + "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in rows) + "</table>"


def _workers(obs: Observation, cwd: Path) -> str:
    loaders: dict[str, list[Event]] = {}
    for e in obs.by_kind["worker_rng"]:
        loaders.setdefault(str(e.get("loader")), []).append(e)
    if not loaders:
        return ""
    drawn: dict[tuple, set] = {}
    for e in obs.by_kind["worker_rng_drawn"]:
        drawn[(str(e.get("loader")), e.get("worker_id"))] = set(e.get("drawn") or [])
    parts = ["<h2>DataLoader worker random streams</h2><p class=\"dim\">The next draws of each random stream in "
             "each worker, taken from copies after worker_init_fn. Workers that share a stream draw the same "
             "numbers (highlighted); that matters only for streams the dataset draws from.</p>"]
    for key, events in loaders.items():
        parts.append(_loader(key, sorted(events, key=lambda e: e.get("worker_id", 0)), drawn, cwd))
    return "".join(parts)


def _loader(key: str, events: list[Event], drawn: dict[tuple, set], cwd: Path) -> str:
    columns: list[tuple[str, str]] = []  # (family, stream name)
    for e in events:
        for family in ("streams", "global"):
            for name in e.get(family) or {}:
                if (family, name) not in columns:
                    columns.append((family, name))
    values = {(e.get("worker_id"), c): (e.get(c[0]) or {}).get(c[1]) for e in events for c in columns}
    head = "".join(f"<th>{escape(name)}{' (global)' if family == 'global' else ''}</th>" for family, name in columns)
    rows = []
    for e in events:
        cells = []
        for column in columns:
            value = values[(e.get("worker_id"), column)]
            same = sum(1 for other in events if values[(other.get("worker_id"), column)] == value) > 1
            moved = f"{column[0]}:{column[1]}" in drawn.get((key, e.get("worker_id")), set())
            text = ", ".join(f"{v:.4f}" for v in value[:DRAWS_SHOWN]) if isinstance(value, list) else "-"
            cells.append(f"<td class=\"{'same' if same and value is not None else ''}\"><code>{text}</code>"
                         f"{' <span class=dim>(drawn in the first batch)</span>' if moved else ''}</td>")
        rows.append(f"<tr><th>worker {e.get('worker_id')}</th>{''.join(cells)}</tr>")
    first = events[0]
    title = (f"<h3>DataLoader at {escape(where(first.get('site'), cwd))} over {escape(str(first.get('dataset')))}, "
             f"{first.get('num_workers')} worker(s)</h3>")
    return title + f"<table><tr><th></th>{head}</tr>{''.join(rows)}</table>" + _streams_chart(key, events, columns)


def _streams_chart(key: str, events: list[Event], columns: list[tuple[str, str]]) -> str:
    """The dataset's own streams side by side: one line per worker over its next draws (lines
    of workers with identical streams lie on top of each other)."""
    parts = []
    for number, (family, name) in enumerate(c for c in columns if c[0] == "streams"):
        lines = [Line(f"worker {e.get('worker_id')}: {name}",
                      [(i + 1, float(v)) for i, v in enumerate((e.get(family) or {}).get(name) or [])
                       if isinstance(v, (int, float)) and math.isfinite(v)]) for e in events]
        parts.append(chart(lines, f"workers-{escape(key)}-{number}".replace(":", "-"), 3, x_label="draw"))
    return "".join(parts)


def _crashes(obs: Observation, cwd: Path) -> str:
    events = obs.by_kind["crash"]
    if not events:
        return ""
    parts = ["<h2>Crash</h2>"]
    for e in events:
        parts.append(_table([("exception", str(e.get("exception"))), ("message", str(e.get("message"))),
                             ("line", where(e.get("site"), cwd)), ("after optimizer steps", str(e.get("step", 0)))]))
    return "".join(parts)
