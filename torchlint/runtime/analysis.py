"""From the monitors' events to findings: a runtime verdict for each static finding, and the
runtime-only checks. Pure data processing; no torch."""

from __future__ import annotations

import json
import math
import os
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

from torchlint.diagnostics import Finding
from torchlint.records import RuntimeResult
from torchlint.files import display_path
from torchlint import catalog
from torchlint.safe_io import DEFAULT_MAX_FILE_SIZE, RefusedFile, read_regular_file
from torchlint.source import DecodeFailure, SourceFile, decode_source

CLASS_INDEX_LOSSES = ("cross_entropy", "nll_loss")

Verdict = RuntimeResult


def load_events(directory: Path) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for path in sorted(directory.glob("events-*.jsonl")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError:  # a line cut short by a kill
                continue
    return events


@dataclass
class Observation:
    """Everything the monitors saw in one run, across all processes."""

    events: list[dict[str, Any]]
    by_kind: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))
    counts: dict[str, int] = field(default_factory=dict)
    files: set[str] = field(default_factory=set)
    processes: int = 0
    steps: int = 0
    budget_reached: bool = False
    internal_errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        last_counts: dict[int, dict[str, Any]] = {}
        for event in self.events:
            kind = str(event.get("kind"))
            self.by_kind[kind].append(event)
            if kind == "counts":
                last_counts[event["pid"]] = event
            elif kind == "process":
                self.processes += 1
            elif kind == "budget":
                self.budget_reached = True
            elif kind == "internal_error":
                self.internal_errors.append(f"{event.get('where')}: {event.get('error')}")
        for dump in last_counts.values():
            for key, n in dump["counts"].items():
                self.counts[key] = self.counts.get(key, 0) + n
            self.files.update(dump.get("files") or [])
            if dump.get("main"):
                self.files.add(dump["main"])
            self.steps = max(self.steps, dump.get("steps", 0))
        for kind_events in self.by_kind.values():
            for event in kind_events:
                site = event.get("site")
                if site:
                    self.files.add(site[0])

    def hits(self, kind: str, path: str, rows: tuple[int, int], fallback: int) -> int:
        counted = sum(self.counts.get(f"{kind}@{path}:{row}", 0) for row in range(rows[0], rows[1] + 1))
        return max(counted, fallback)


def _at(site: Optional[list], path: str, rows: tuple[int, int]) -> bool:
    return site is not None and len(site) > 1 and site[0] == path and rows[0] <= site[1] <= rows[1]


def _where(site: Optional[list], cwd: Path) -> str:
    return f"{display_path(Path(site[0]), cwd)}:{site[1]}" if site else "?"


def _shape(desc: Optional[dict[str, Any]]) -> str:
    return str(tuple(desc["shape"])) if desc else "?"


def _verdict(verdict: str, evidence: str, hits: int) -> Verdict:
    return RuntimeResult(verdict, evidence, hits)


def _not_reached(what: str) -> Verdict:
    return _verdict("not-reached", what, 0)


def _calls_at(obs: Observation, kind: str, path: str, rows: tuple[int, int]) -> tuple[list[dict], int]:
    """The recorded events of `kind` at the flagged lines, and how often they ran in all."""
    calls = [e for e in obs.by_kind[kind] if _at(e["site"], path, rows)]
    return calls, obs.hits(kind, path, rows, len(calls))


# -- static findings ----------------------------------------------------------------------

def _tl101(obs: Observation, path: str, rows: tuple[int, int], cwd: Path) -> Verdict:
    calls, hits = _calls_at(obs, "backward", path, rows)
    if not calls:
        return _not_reached("no backward/grad call ran at this line")
    for e in calls:
        no_graph = not e.get("requires_grad") and not e.get("has_grad_fn")
        if no_graph and (not e["grad_enabled"] or "does not require grad" in (e.get("error") or "")):
            mode = "off" if not e["grad_enabled"] else "on"
            outcome = f"{e['fn']} raised {e['error']}" if e.get("error") else f"{e['fn']} had nothing to differentiate"
            return _verdict("confirmed", f"at step {e['step']}, grad mode was {mode} at the call and the tensor "
                                         f"had no graph (requires_grad=False, grad_fn=None); {outcome}", hits)
    modes = sorted({"on" if e["grad_enabled"] else "off" for e in calls})
    return _verdict("not-observed", f"ran {hits} time(s); grad mode was {'/'.join(modes)} and the tensor had a "
                                    "graph at every call", hits)


def _tl102(obs: Observation, path: str, rows: tuple[int, int], cwd: Path) -> Verdict:
    writes = [e for e in obs.by_kind["data_write"] if _at(e["site"], path, rows)]
    hits = obs.hits("data", path, rows, len(writes))
    if not hits:
        return _not_reached("no `.data` access ran at this line")
    for e in writes:
        if e.get("saved_by"):
            what = f"`{e['name']}`" if e.get("name") else "a tensor"
            tensor = e["tensor"]
            return _verdict("confirmed", f"at step {e['step']}, `.data` of {what} {_shape(tensor)} {tensor['dtype']} "
                                         f"was written after the forward at {_where(e['forward_site'], cwd)} and "
                                         f"before the backward at {_where(e['backward_site'], cwd)}, while "
                                         f"{e['saved_by']} held it for backward: the gradient used the new values",
                            hits)
    if writes:
        return _verdict("not-observed", f"ran {hits} time(s); {len(writes)} write(s) fell between a forward and its "
                                        "backward, but no autograd node had saved the written tensor", hits)
    return _verdict("not-observed", f"ran {hits} time(s); no write happened while a forward awaited its backward",
                    hits)


def _loss_calls(obs: Observation, path: str, rows: tuple[int, int], functions: Iterable[str]) -> list[dict]:
    """Loss calls at the flagged lines, else later calls in the same function (the label may be
    cast a line or two before the loss)."""
    calls = [e for e in obs.by_kind["loss"] if e["fn"] in functions]
    here = [e for e in calls if _at(e["site"], path, rows) or _at(e.get("module_site"), path, rows)]
    if here:
        return here
    return [e for e in calls if e["site"] and e["site"][0] == path and e["site"][3] <= rows[0] <= e["site"][4]
            and e["site"][1] > rows[0]]


def _is_float(desc: Optional[dict[str, Any]]) -> bool:
    return desc is not None and "float" in desc["dtype"]


def _tl201(obs: Observation, path: str, rows: tuple[int, int], cwd: Path) -> Verdict:
    calls = _loss_calls(obs, path, rows, CLASS_INDEX_LOSSES)
    if not calls:
        return _not_reached("no cross_entropy/nll_loss call ran at or after this line in this function")
    for e in calls:
        if _is_float(e.get("target")):
            target = e["target"]
            head = (f"at step {e['step']}, the target reaching {e['fn']} at {_where(e['site'], cwd)} was "
                    f"{target['dtype']} of shape {_shape(target)} (input {_shape(e['input'])})")
            if e.get("error"):
                return _verdict("confirmed", f"{head}: {e['error']}", len(calls))
            if not e.get("class_index"):
                sums = e.get("row_sums")
                detail = f" (first rows sum to {sums})" if sums else ""
                return _verdict("confirmed", f"{head}: read as class probabilities, not class indices{detail}",
                                len(calls))
    dtypes = sorted({e["target"]["dtype"] for e in calls if e.get("target")})
    return _verdict("not-observed", f"ran {len(calls)} time(s); the target reaching the loss was "
                                    f"{', '.join(dtypes) or 'not a tensor'}", len(calls))


def _worker_groups(obs: Observation, match: Callable[[dict], bool]) -> list[list[dict]]:
    groups: dict[str, list[dict]] = defaultdict(list)
    for e in obs.by_kind["worker_rng"]:
        if match(e):
            groups[e["loader"]].append(e)
    return [sorted(g, key=lambda e: e["worker_id"]) for g in groups.values()]


def _identical(group: list[dict], section: str, drawn: set[str]) -> dict[str, list]:
    """Streams every worker of the group drew identically, of those the dataset drew from."""
    if len(group) < 2:
        return {}
    names = set.intersection(*(set(e[section]) for e in group))
    return {n: group[0][section][n] for n in sorted(names)
            if group[0][section][n] is not None and all(e[section][n] == group[0][section][n] for e in group)
            and f"{section}:{n}" in drawn}


def _drawn(obs: Observation, group: list[dict]) -> set[str]:
    """The streams that moved during a first batch of any worker of the group's DataLoader."""
    loader = group[0]["loader"]
    return {name for e in obs.by_kind["worker_rng_drawn"] if e.get("loader") == loader for name in e["drawn"]}


def _tl301(obs: Observation, path: str, rows: tuple[int, int], cwd: Path) -> Verdict:
    groups = _worker_groups(obs, lambda e: _at(e["site"], path, rows))
    if not groups:
        return _not_reached("no DataLoader worker started from this line")
    starts = sum(len(g) for g in groups)
    for group in groups:
        same = _identical(group, "streams", _drawn(obs, group))
        if same:
            name, draws = next(iter(same.items()))
            return _verdict("confirmed", f"{len(group)} workers of this DataLoader drew identical first values "
                                         f"from {name}: {draws}", starts)
    group = max(groups, key=len)
    if len(group) < 2:
        return _verdict("not-observed", f"{starts} worker start(s), never two workers of one DataLoader", starts)
    if not any(g[0]["streams"] for g in groups):
        return _verdict("not-observed", f"{starts} worker start(s); the dataset ({group[0]['dataset']}) held no "
                                        "RNG object", starts)
    undrawn = _identical(group, "streams", {f"streams:{n}" for n in group[0]["streams"]})
    if undrawn:
        return _verdict("not-observed", f"{starts} worker start(s); workers held identical {', '.join(undrawn)}, "
                                        "but no worker drew from it while loading a batch", starts)
    name = next(iter(group[0]["streams"]))
    shown = "; ".join(f"worker {e['worker_id']}: {e['streams'].get(name)}" for e in group[:2])
    return _verdict("not-observed", f"{starts} worker start(s); workers drew different values from {name} "
                                    f"({shown})", starts)


def _tl501(obs: Observation, path: str, rows: tuple[int, int], cwd: Path) -> Verdict:
    calls = [e for e in obs.by_kind["loss"] if _at(e["site"], path, rows) or _at(e.get("module_site"), path, rows)]
    if not calls:
        return _not_reached("the loss constructed or called here never ran")
    ranked = [e for e in calls if e.get("world", 1) > 1]
    if not ranked:
        return _verdict("not-observed", f"ran {len(calls)} time(s) in processes without a process group of more "
                                        "than one rank, where the mean is the global mean", len(calls))
    distributed = [e for e in ranked if e.get("reduction") == "mean" and e.get("counted") is not None]
    if not distributed:
        errors = sorted({e["error"] for e in ranked if e.get("error")})
        why = f"the loss raised ({errors[0]})" if errors else "no call had reduction='mean' with countable targets"
        return _verdict("not-observed", f"ran {len(ranked)} time(s) on {max(e['world'] for e in ranked)} ranks, but "
                                        f"{why}, so no per-rank counts could be compared", len(calls))
    by_rank: dict[int, list[int]] = defaultdict(list)
    for e in distributed:
        by_rank[e["rank"]].append(e["counted"])
    ranks = sorted(by_rank)
    common = min(len(v) for v in by_rank.values())
    for index in range(common):
        counts = [by_rank[r][index] for r in ranks]
        if len(set(counts)) > 1:
            total, world = sum(counts), len(ranks)
            parts = ", ".join(f"rank {r} counted {n}" for r, n in zip(ranks, counts))
            weight_errors = ", ".join(f"rank {r} {_weight_error(total, world, n)}" for r, n in zip(ranks, counts))
            return _verdict("confirmed", f"call {index + 1}: {parts} (of {total}); DDP's mean of per-rank means "
                                         f"weights each element, relative to the global mean, by: {weight_errors}",
                            len(calls))
    sample = sorted({n for v in by_rank.values() for n in v})
    return _verdict("not-observed", f"ran {len(distributed)} time(s) across {len(ranks)} ranks; every rank counted the "
                                    f"same number of elements at each call ({', '.join(map(str, sample[:5]))})",
                    len(calls))


def _weight_error(total: int, world: int, count: int) -> str:
    if count == 0:
        return "no elements (its mean is NaN or 0)"
    return f"{(total / (world * count) - 1) * 100:+.1f}%"


def _tl103(obs: Observation, path: str, rows: tuple[int, int], cwd: Path) -> Verdict:
    calls, hits = _calls_at(obs, "backward", path, rows)
    if not calls:
        return _not_reached("no backward call ran at this line")
    for e in obs.by_kind["stale_grads"]:
        if _at(e["site"], path, rows):
            what = f"`{e['name']}`" if e.get("name") else "a parameter"
            return _verdict("confirmed", f"at step {e['step']}, backward added to gradients left over from the "
                                         f"previous optimizer step ({what} had a gradient of norm {e['norm']:g}): "
                                         "no zero_grad ran since that step", hits)
    steps = max((e["step"] for e in calls), default=0)
    return _verdict("not-observed", f"ran {hits} time(s) over {steps} optimizer step(s); the gradients were reset "
                                    "(or empty) before each backward that followed a step", hits)


def _tl104(obs: Observation, path: str, rows: tuple[int, int], cwd: Path) -> Verdict:
    calls, hits = _calls_at(obs, "zero_grad", path, rows)
    if not calls:
        return _not_reached("no zero_grad call ran at this line")
    for e in obs.by_kind["zeroed_before_step"]:
        if _at(e["site"], path, rows):
            return _verdict("confirmed", f"at step {e['step']}, this zero_grad ran after the backward and before "
                                         f"the optimizer step at {_where(e['step_site'], cwd)}, which saw no "
                                         "gradients", hits)
    return _verdict("not-observed", f"ran {hits} time(s); a backward always ran between it and the next step",
                    hits)


def _tl401(obs: Observation, path: str, rows: tuple[int, int], cwd: Path) -> Verdict:
    losses = [e for e in obs.by_kind["loss"] if e["fn"] in ("cross_entropy", "binary_cross_entropy_with_logits")]
    # The loss at this line, or (following the tensor) a loss whose input came from the softmax here.
    calls = [e for e in losses if _at(e["site"], path, rows) or _at(e.get("module_site"), path, rows)
             or _at(e.get("producer_site"), path, rows)]
    if not calls:
        return _not_reached("no cross_entropy / BCE-with-logits call ran at this line or on its softmax output")
    for e in calls:
        producer = e.get("input_producer") or ("softmax" if e.get("input_rows_sum_to_one") else None)
        if producer:
            again = "log_softmax" if e["fn"] == "cross_entropy" else "a sigmoid"
            how = "its autograd node" if e.get("input_producer") else "its rows sum to 1"
            return _verdict("confirmed", f"at step {e['step']}, the input {_shape(e.get('input'))} of {e['fn']} "
                                         f"was a {producer} output ({how}), and {e['fn']} applies {again} again",
                            len(calls))
    return _verdict("not-observed", f"ran {len(calls)} time(s); the loss input was never a softmax/sigmoid output",
                    len(calls))


def _tl402(obs: Observation, path: str, rows: tuple[int, int], cwd: Path) -> Verdict:
    calls, hits = _calls_at(obs, "dropout", path, rows)
    if not calls:
        return _not_reached("no functional dropout call ran at this line")
    for e in calls:
        if e["training_arg"] and not e["module_training"]:
            return _verdict("confirmed", f"at step {e['step']}, {e['fn']}(p={e['p']}) was active while "
                                         f"{e['module']} was in eval mode (training=False)", hits)
    modes = "eval mode with training= passed" if any(not e["module_training"] for e in calls) else "train mode"
    return _verdict("not-observed", f"ran {hits} time(s), always in {modes}", hits)


def _tl403(obs: Observation, path: str, rows: tuple[int, int], cwd: Path) -> Verdict:
    calls = [e for e in obs.by_kind["implicit_softmax"]
             if _at(e["site"], path, rows) or _at(e.get("module_site"), path, rows)]
    if not calls:
        return _not_reached("no softmax without dim ran here")
    for e in calls:
        if e["implicit_dim"] == 0 and len(e["shape"]) > 1:
            return _verdict("confirmed", f"at step {e['step']}, {e['fn']} got a {len(e['shape'])}-D input "
                                         f"{tuple(e['shape'])} and no dim, so it normalized over dim 0, the first "
                                         "dimension", len(calls))
    shapes = sorted({str(tuple(e["shape"])) for e in calls})
    return _verdict("not-observed", f"ran {len(calls)} time(s) on inputs {', '.join(shapes[:3])}, where the implicit "
                                    "dim is the last (2-D) or the only one", len(calls))


def _tl704(obs: Observation, path: str, rows: tuple[int, int], cwd: Path) -> Verdict:
    hits = obs.hits("eval", path, rows, 0)
    for e in obs.by_kind["eval_backward"]:
        if _at(e.get("eval_site"), path, rows):
            return _verdict("confirmed", f"at step {e['step']}, backward at {_where(e['site'], cwd)} ran through "
                                         f"{e['module']} still in eval mode from this eval() call: its "
                                         f"{', '.join(e['layers'])} layer(s) behaved as at evaluation", max(hits, 1))
    if not hits:
        return _not_reached("no eval() call ran at this line")
    return _verdict("not-observed", f"ran {hits} time(s); no backward ran through a Dropout/BatchNorm model left in "
                                    "eval mode by it", hits)


def _tl601(obs: Observation, path: str, rows: tuple[int, int], cwd: Path) -> Verdict:
    calls, hits = _calls_at(obs, "load", path, rows)
    if not calls:
        return _not_reached("no torch.load call ran at this line")
    for e in calls:
        if e.get("error") and "Unpickl" in e["error"]:
            detail = f" ({e['detail'][0].rstrip('.')})" if e.get("detail") else ""
            return _verdict("confirmed", f"at step {e['step']}, torch.load raised {e['error'].rstrip('.')}{detail}: "
                                         "the file holds objects only full unpickling can build, so it loads "
                                         "only with weights_only=False, which runs code from the file", hits)
        if e.get("weights_only") is False:
            return _verdict("confirmed", f"at step {e['step']}, torch.load ran with weights_only=False: any "
                                         "callable the file names was imported and called", hits)
    how = "with weights_only=True" if all(e.get("weights_only") for e in calls) else "without error"
    return _verdict("not-observed", f"ran {hits} time(s), each {how}: the file held only tensors and plain "
                                    "containers", hits)


def static_monitors() -> dict[str, Callable[[Observation, str, tuple[int, int], Path], Verdict]]:
    """code -> the judge each static rule names as its `evidence.runtime`."""
    return {r.code: globals()[r.evidence.runtime] for r in catalog.static_rules() if r.evidence.runtime}


def judge_static(findings: list[Finding], obs: Observation, cwd: Path, stopped_early: Optional[str] = None) -> None:
    """Attach a runtime verdict to each static finding (in place). `stopped_early` says why the
    program did not run to its end (budget, timeout), for findings it did not reach."""
    monitors = static_monitors()
    for f in findings:
        monitor = monitors.get(f.code)
        if monitor is None:
            f.runtime = _verdict("not-monitored", f"torchlint run has no runtime monitor for {f.code}", 0)
            continue
        path = os.path.realpath(cwd / f.path)
        f.runtime = monitor(obs, path, (f.row, max(f.row, f.end_row)), cwd)
        if f.runtime.verdict == "not-reached" and stopped_early:
            f.runtime = f.runtime.noted(f" ({stopped_early})")


# -- runtime-only checks ------------------------------------------------------------------

@dataclass
class RuntimeProblem:
    code: str
    site: Optional[list]
    message: str


def _dedupe(problems: list[RuntimeProblem]) -> list[RuntimeProblem]:
    seen, out = set(), []
    for p in problems:
        key = (p.code, tuple(p.site[:2]) if p.site else None)
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out


def _tl120(obs: Observation, cwd: Path) -> list[RuntimeProblem]:
    by_site: dict[tuple, list[dict]] = defaultdict(list)
    for e in obs.by_kind["step"]:
        by_site[(tuple(e["site"][:2]) if e["site"] else None, e["pid"])].append(e)
    out = []
    for steps in by_site.values():
        inert = steps[0].get("inert") or []
        if inert:
            shown = ", ".join(f"`{n}`" for n in inert[:6]) + (", ..." if len(inert) > 6 else "")
            out.append(RuntimeProblem("TL120", steps[0]["site"],
                                      f"{len(inert)} of the {steps[0]['count']} tensors given to "
                                      f"{steps[0]['optimizer']} are plain tensors with requires_grad=False, so "
                                      f"they can never receive a gradient: {shown}"))
            continue
        never = set(steps[0]["dead"]).intersection(*(set(e["dead"]) for e in steps[1:]))
        if never:
            names = [n for n in steps[0]["dead"] if n in never]
            shown = ", ".join(f"`{n}`" for n in names[:6]) + (", ..." if len(names) > 6 else "")
            out.append(RuntimeProblem("TL120", steps[0]["site"],
                                      f"{len(names)} of {steps[0]['total']} parameters that require grad received "
                                      f"no gradient in any of the {len(steps)} {steps[0]['optimizer']} step(s): "
                                      f"{shown}"))
    return out


def _tl121(obs: Observation, cwd: Path) -> list[RuntimeProblem]:
    out = []
    for e in obs.by_kind["nonfinite"]:
        if e["where"] == "activation":
            what = f"`{e['name']}` ({e['module']})" if e.get("name") else e["module"]
            if e.get("bad_params"):
                origin = f"whose own parameters {', '.join(e['bad_params'])} already held NaN/Inf"
            elif e["inputs_finite"]:
                origin = "from finite inputs and parameters, so this layer's computation produced it"
            else:
                origin = "and its input already held NaN/Inf from code between layers"
            message = (f"NaN/Inf first appeared at step {e['step']} in the output {_shape(e['output'])} of {what}, "
                       f"{origin}")
        elif e["where"] == "loss":
            but = " but for -inf" if e.get("masked_inf") else ""
            message = f"the loss was {e['value']} at step {e['step']} while every layer output was finite{but}"
        else:
            message = (f"the gradient of `{e.get('name') or 'a parameter'}` {_shape(e['tensor'])} held NaN/Inf at "
                       f"step {e['step']} while the loss and activations were finite"
                       f"{' but for -inf' if e.get('masked_inf') else ''}")
        masked = e.get("masked_inf")
        if masked:
            what = f"`{masked['name']}` ({masked['module']})" if masked.get("name") else masked["module"]
            message += (f"; before it, at step {masked['step']}, the output of {what} at {_where(masked['site'], cwd)} "
                        "held -inf (a mask is harmless where a softmax or masked_fill consumes it; this one was not)")
        out.append(RuntimeProblem("TL121", e["site"], message))
    return out


def _tl220(obs: Observation, cwd: Path) -> list[RuntimeProblem]:
    return [RuntimeProblem("TL220", e["site"], f"{e['module']}'s parameters are on {', '.join(e['params'])} but "
                                               f"its input is on {', '.join(e['inputs'])}")
            for e in obs.by_kind["device_mismatch"]]


def _tl221(obs: Observation, cwd: Path, explained: set) -> list[RuntimeProblem]:
    out = []
    for e in obs.by_kind["loss"]:
        site_key = tuple(e["site"][:2]) if e.get("site") else None
        target = e.get("target")
        if not target:
            continue
        if e["fn"] in CLASS_INDEX_LOSSES:
            classes = e.get("classes")
            low_high = e.get("label_range")
            if e.get("class_index") and low_high and isinstance(classes, int) \
                    and (low_high[0] < 0 or low_high[1] >= classes):
                error = f": {e['error']}" if e.get("error") else ""
                out.append(RuntimeProblem("TL221", e["site"],
                                          f"labels reaching {e['fn']} range over [{low_high[0]}, {low_high[1]}] but "
                                          f"the input has {classes} classes (valid: 0..{classes - 1} or "
                                          f"ignore_index={e['ignore_index']}){error}"))
            elif e.get("error") and e.get("class_index") and site_key not in explained:
                out.append(RuntimeProblem("TL221", e["site"],
                                          f"{e['fn']} cannot use {target['dtype']} labels of shape {_shape(target)} "
                                          f"for input {_shape(e['input'])}: {e['error']}"))
            elif not e.get("class_index") and _bad_probabilities(e):
                low, high = e["prob_range"]
                out.append(RuntimeProblem("TL221", e["site"],
                                          f"{e['fn']} got a {target['dtype']} target shaped like the input, read as "
                                          f"class probabilities, but its values range over [{low:g}, {high:g}]"))
        elif e["fn"].startswith("binary_cross_entropy") and _bad_probabilities(e):
            low, high = e["prob_range"]
            out.append(RuntimeProblem("TL221", e["site"], f"{e['fn']} targets range over [{low:g}, {high:g}]; "
                                                          "they must be probabilities in [0, 1]"))
    return out


def _bad_probabilities(e: dict[str, Any]) -> bool:
    low_high = e.get("prob_range")
    return low_high is not None and (low_high[0] < 0 or low_high[1] > 1)


def _tl222(obs: Observation, cwd: Path) -> list[RuntimeProblem]:
    out = []
    for e in obs.by_kind["mixed_dtypes"]:
        counts = ", ".join(f"{n} {d}" for d, n in sorted(e["dtypes"].items()))
        examples = "; ".join(f"{d}: {', '.join(names)}" for d, names in sorted(e["examples"].items()))
        out.append(RuntimeProblem("TL222", e["site"], f"{e['module']} has floating-point parameters of mixed dtypes "
                                                      f"({counts}) at its first forward ({examples})"))
    return out


def _tl320(obs: Observation, cwd: Path, static_sites: set) -> list[RuntimeProblem]:
    out = []
    for group in _worker_groups(obs, lambda e: True):
        drawn = _drawn(obs, group)
        same = dict(_identical(group, "global", drawn))
        site = group[0]["site"]
        if site is None or (site[0], site[1]) not in static_sites:  # else TL301 reports the dataset's own RNGs
            same.update(_identical(group, "streams", drawn))
        if same:
            names = ", ".join(same)
            first = next(iter(same.values()))
            out.append(RuntimeProblem("TL320", site, f"{len(group)} DataLoader workers drew identical first values "
                                                     f"from {names} (e.g. {first})"))
    return out


def _tl420(obs: Observation, cwd: Path) -> list[RuntimeProblem]:
    out = []
    for e in obs.by_kind["loss"]:
        value, classes = e.get("first_value"), e.get("classes")
        if value is None or not classes or classes < 2 or e.get("weighted") or e.get("label_smoothing"):
            continue
        expected = math.log(classes)
        if math.isfinite(value) and value > expected + max(1.0, 0.5 * expected):
            out.append(RuntimeProblem("TL420", e["site"],
                                      f"the first {e['fn']} loss, before any optimizer step, was {value:.4g} with "
                                      f"{classes} classes; uniform predictions give log({classes}) = {expected:.4g}, "
                                      "so the initial logits are far from uniform"))
    return out


def _tl421(obs: Observation, cwd: Path) -> list[RuntimeProblem]:
    out = []
    for e in obs.by_kind["diverged"]:
        first = ", ".join(f"{v:.4g}" for v in e["first"])
        out.append(RuntimeProblem("TL421", e["site"],
                                  f"the loss reached {e['value']:.4g} at step {e['step']}, still finite but "
                                  f"{abs(e['value']) / max(sorted(e['first'])[1], 1e-2):.2g} times its first values "
                                  f"({first}): the training diverged (learning rate, missing normalization, a "
                                  "sign error in the loss)"))
    return out


def _tl422(obs: Observation, cwd: Path) -> list[RuntimeProblem]:
    return [RuntimeProblem("TL422", e["site"],
                           f"cross_entropy got an input {_shape(e['input'])} with a single class: log_softmax over "
                           "one class is 0, so the loss is always -0.0 and every gradient through it is zero; for "
                           "a binary output use binary_cross_entropy_with_logits, for C classes C outputs")
            for e in obs.by_kind["loss"]
            if e["fn"] == "cross_entropy" and e.get("classes") == 1 and e.get("input_dim", 0) >= 2
            and e.get("grad_enabled")]


def _tl520(obs: Observation, cwd: Path) -> list[RuntimeProblem]:
    by_site: dict[tuple, dict[int, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for e in obs.by_kind["batch"]:
        if e.get("world", 1) > 1 and e.get("site"):
            by_site[tuple(e["site"][:2])][e["rank"]].append(e)
    out = []
    for ranks in by_site.values():
        if len(ranks) < 2:
            continue
        common = min(len(v) for v in ranks.values())
        identical = common > 0 and all(len({ranks[r][i]["hash"] for r in ranks}) == 1 for i in range(common))
        if identical:
            first = next(iter(ranks.values()))[0]
            out.append(RuntimeProblem("TL520", first["site"],
                                      f"all {len(ranks)} ranks fed {first['module']} identical batches in the "
                                      f"{common} training forward(s) compared (input {_shape(first['input'])} "
                                      f"{first['input']['dtype']})"))
    return out


def _tl720(obs: Observation, cwd: Path, static_eval_sites: set) -> list[RuntimeProblem]:
    return [RuntimeProblem("TL720", e["site"],
                           f"backward ran through the forward of {e['module']} at {_where(e['forward_site'], cwd)}, "
                           f"done in eval mode: its {', '.join(e['layers'])} layer(s) behaved as at evaluation")
            for e in obs.by_kind["eval_backward"]
            if not (e.get("eval_site") and (e["eval_site"][0], e["eval_site"][1]) in static_eval_sites)]


def runtime_problems(obs: Observation, static: list[Finding], cwd: Path) -> list[RuntimeProblem]:
    confirmed_casts = {(os.path.realpath(cwd / f.path), f.row) for f in static
                       if f.code == "TL201" and f.runtime and f.runtime.confirmed}
    explained = {(e["site"][0], e["site"][1]) for e in obs.by_kind["loss"]
                 if e.get("site") and any(p == e["site"][0] and e["site"][3] <= row <= e["site"][1]
                                          for p, row in confirmed_casts)}
    static_rng_sites = {(os.path.realpath(cwd / f.path), f.row) for f in static if f.code == "TL301"}
    static_eval_sites = {(os.path.realpath(cwd / f.path), f.row) for f in static if f.code == "TL704"}
    problems = (_tl120(obs, cwd) + _tl121(obs, cwd) + _tl220(obs, cwd) + _tl221(obs, cwd, explained)
                + _tl222(obs, cwd) + _tl320(obs, cwd, static_rng_sites) + _tl420(obs, cwd) + _tl421(obs, cwd)
                + _tl422(obs, cwd) + _tl520(obs, cwd)
                + _tl720(obs, cwd, static_eval_sites))
    return _dedupe(problems)


def problem_findings(problems: list[RuntimeProblem], cwd: Path) -> list[Finding]:
    out = []
    sources: dict[str, Optional[SourceFile]] = {}
    for p in problems:
        check = catalog.by_code()[p.code]
        path, row = (p.site[0], p.site[1]) if p.site else ("<unknown>", 1)
        if path not in sources:
            sources[path] = _source(path)
        source = sources[path]
        line = source.line(row) if source is not None else ""
        col = len(line) - len(line.lstrip()) + 1
        out.append(Finding(code=p.code, message=p.message, path=display_path(Path(path), cwd), row=row, col=col,
                           end_row=row, end_col=max(col + 1, len(line.rstrip()) + 1), severity=check.severity,
                           name=check.name, runtime=_verdict("confirmed", p.message, 1)))
    return out


def _source(path: str) -> Optional[SourceFile]:
    """The file a problem points at, read and decoded as `check` reads it (once per file)."""
    try:
        return SourceFile(path, decode_source(read_regular_file(path, DEFAULT_MAX_FILE_SIZE)))
    except (OSError, RefusedFile, DecodeFailure):
        return None
