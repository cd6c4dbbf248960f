"""From the monitors' events to findings: each static finding gets the verdict of its rule's
runtime judge (`evidence.runtime`), and each runtime check in the catalog reports its problems
(`RuntimeCheck.problems`). The judges live beside their rules; this module only reads the
events, asks the catalog and locates the results. Pure data processing; no torch."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from torchlint import catalog
from torchlint.diagnostics import Finding
from torchlint.files import display_path
from torchlint.records import RuntimeResult
from torchlint.rules.meta.program_crashed import name_runtime_causes
from torchlint.runtime.judging import Observation, RuntimeProblem
from torchlint.safe_io import DEFAULT_MAX_FILE_SIZE, RefusedFile, read_regular_file
from torchlint.source import DecodeFailure, SourceFile, decode_source

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional
    from torchlint.runtime.judging import StaticJudge

__all__ = ["Observation", "RuntimeProblem", "judge_static", "load_events", "problem_findings", "runtime_problems",
           "static_monitors"]


def load_events(directory: Path) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for path in sorted(directory.glob("events-*.jsonl")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError:  # a line cut short by a kill
                continue
    for path in sorted(directory.glob("fault-*.txt")):
        crash = fault_crash(path.read_text(encoding="utf-8", errors="replace")[:100_000], int(path.stem[6:]), events)
        if crash is not None:
            events.append(crash)
    return events


_FAULT = re.compile(r"^Fatal Python error: (.+)$", re.M)
_FAULT_FRAME = re.compile(r'^  File "(.+)", line (\d+) in (.+)$')


def fault_crash(text: str, pid: int, events: list[dict[str, Any]]) -> Optional[dict[str, Any]]:
    """The `crash` event of a process a fatal signal killed, from faulthandler's dump (the
    monitor's fault-PID.txt): the innermost frame of the user's files that process loaded."""
    fatal = _FAULT.search(text)
    if fatal is None:
        return None
    mine = [e for e in events if e.get("pid") == pid]
    counts = [e for e in mine if e.get("kind") == "counts"]
    last = counts[-1] if counts else {}
    user: set[str] = set()  # the user's files any process loaded (a forked child may have written none)
    for e in events:
        if e.get("kind") == "counts":
            user.update(e.get("files") or [], [e["main"]] if e.get("main") else [])
    current = text.find("Current thread")
    frames: list[list] = []
    for line in text[current if current >= 0 else fatal.end():].splitlines()[1:]:
        match = _FAULT_FRAME.match(line)
        if not match:
            break
        path = os.path.realpath(match[1])
        if path in user:
            row = int(match[2])
            frames.insert(0, [path, row, match[3], row, row])  # most recent call first in the dump
    rank = next((e.get("rank", 0) for e in mine if e.get("kind") == "process"), 0)
    return {"kind": "crash", "pid": pid, "rank": rank, "world": 1, "site": frames[-1] if frames else None,
            "step": last.get("steps", 0), "exception": "Fatal Python error", "message": fatal[1].strip(),
            "detail": [], "frames": frames, "verb": "signal"}


def static_monitors() -> dict[str, StaticJudge]:
    """code -> the judge each static rule names as its `evidence.runtime`."""
    return {r.code: r.evidence.runtime for r in catalog.static_rules() if r.evidence.runtime}


def judge_static(findings: list[Finding], obs: Observation, cwd: Path, stopped_early: Optional[str] = None) -> None:
    """Attach a runtime verdict to each static finding (in place). `stopped_early` says why the
    program did not run to its end (budget, timeout), for findings it did not reach."""
    monitors = static_monitors()
    for f in findings:
        monitor = monitors.get(f.code)
        if monitor is None:
            f.runtime = RuntimeResult("not-monitored", f"torchlint run has no runtime monitor for {f.code}", 0)
            continue
        path = os.path.realpath(cwd / f.path)
        f.runtime = monitor(obs, path, (f.row, max(f.row, f.end_row)), cwd)
        if f.runtime.verdict == "not-reached" and stopped_early:
            f.runtime = f.runtime.noted(f" ({stopped_early})")


def _dedupe(problems: list[RuntimeProblem]) -> list[RuntimeProblem]:
    seen, out = set(), []
    for p in problems:
        key = (p.code, tuple(p.site[:2]) if p.site else None)
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out


def runtime_problems(obs: Observation, static: list[Finding], cwd: Path) -> list[RuntimeProblem]:
    """Every runtime check's problems, in code order. A check may change the verdicts of
    `static` (a crash confirms the finding it is), which the checks after it see."""
    problems: list[RuntimeProblem] = []
    for check in catalog.runtime_checks():
        found = check.problems(obs, static, cwd)
        problems += _dedupe(found) if check.one_per_site else found
    name_runtime_causes(problems)
    return problems


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
                           name=check.name, runtime=RuntimeResult("confirmed", p.message, 1)))
    return out


def _source(path: str) -> Optional[SourceFile]:
    """The file a problem points at, read and decoded as `check` reads it (once per file)."""
    try:
        return SourceFile(path, decode_source(read_regular_file(path, DEFAULT_MAX_FILE_SIZE)))
    except (OSError, RefusedFile, DecodeFailure):
        return None
