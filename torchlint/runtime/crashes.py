"""A crash is a result: the exception that ended a process of the program becomes a TL020
finding at the user's frame it was raised through, and confirms the static findings whose
documented failure it is. Pure data processing; no torch."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Optional

from torchlint.diagnostics import Finding
from torchlint.files import display_path
from torchlint.records import RuntimeResult

# code -> the error torch (or Python) raises when that rule's hazard happens.
CRASH_SIGNATURES: dict[str, re.Pattern[str]] = {code: re.compile(pattern) for code, pattern in {
    "TL101": r"does not require grad and does not have a grad_fn",
    "TL105": r"leaf Variable that requires grad is being used in an in-place operation",
    "TL106": r"Only Tensors of floating point and complex dtype can require gradients",
    "TL108": r"does not support the context manager protocol|object has no attribute '__enter__'",
    "TL201": r"expected scalar type Long|[Ee]xpected .*target.* (Long|Int)|target dtype to be Long|"
             r"not implemented for 'Float'|Expected floating point type for target",
    "TL208": r"values to unpack",
    "TL304": r"mutually exclusive",
    "TL601": r"UnpicklingError|Weights only load failed|WeightsUnpickler",
    "TL702": r"before Module\.__init__\(\) call",
    "TL909": r"invalid index of a 0-dim tensor",
}.items()}

Event = dict[str, Any]


def crash_events(events: list[Event]) -> list[Event]:
    """The crashes worth reporting: one per (exception, message, frame); a crash with no frame of
    the user's (torchrun's own ChildFailedError) only when no other process crashed in user code."""
    seen, out = set(), []
    for e in events:
        key = (e.get("exception"), e.get("message"), tuple(e["site"][:2]) if e.get("site") else None)
        if key not in seen:
            seen.add(key)
            out.append(e)
    located = [e for e in out if e.get("site")]
    return located or out


def _text(e: Event) -> str:
    return " ".join([f"{e.get('exception')}: {e.get('message')}", *(e.get("detail") or [])])


def describe(e: Event, cwd: Path) -> str:
    text = (f"{e['exception']}: {e['message']}" if e.get("message") else e["exception"]).rstrip(" .")
    if e.get("detail"):
        text += f" ({'; '.join(d.rstrip(' .') for d in e['detail'])})"
    where = f" in `{e['site'][2]}` ({_where(e['site'], cwd)})" if e.get("site") else ""
    rank = f" in rank {e['rank']}" if e.get("world", 1) > 1 else ""
    return f"{text}, raised{where}{rank} after {e['step']} optimizer step(s)"


def _where(site: list, cwd: Path) -> str:
    return f"{display_path(Path(site[0]), cwd)}:{site[1]}"


def _through(frames: list[list], path: str, rows: tuple[int, int]) -> Optional[list]:
    """The frame of the traceback at the flagged lines, or else one later in the same function
    (a label cast a line before the loss that rejects it)."""
    for frame in reversed(frames):
        if frame[0] == path and rows[0] <= frame[1] <= rows[1]:
            return frame
    for frame in reversed(frames):
        if frame[0] == path and frame[3] <= rows[0] <= frame[1]:
            return frame
    return None


def confirm_by_crash(findings: list[Finding], crashes: list[Event], cwd: Path) -> dict[int, list[str]]:
    """Confirm (in place) the static findings whose hazard a crash is. Returns, per crash index,
    the findings it confirmed, for the TL020 message."""
    explained: dict[int, list[str]] = {}
    for f in findings:
        signature = CRASH_SIGNATURES.get(f.code)
        if signature is None:
            continue
        path = os.path.realpath(cwd / f.path)
        for index, e in enumerate(crashes):
            frame = _through(e.get("frames") or [], path, (f.row, max(f.row, f.end_row)))
            if frame is None or not signature.search(_text(e)):
                continue
            if not (f.runtime and f.runtime.confirmed):  # else a monitor already said more
                f.runtime = RuntimeResult("confirmed", f"the program crashed with {describe(e, cwd)}",
                                          max(1, f.runtime.hits if f.runtime else 0))
            explained.setdefault(index, []).append(f"{f.code} at {f.path}:{f.row}")
            break
    return explained


def crash_messages(crashes: list[Event], explained: dict[int, list[str]], cwd: Path) -> list[tuple[Optional[list], str]]:
    """(site, message) of each TL020 finding."""
    out = []
    for index, e in enumerate(crashes):
        if index in explained:
            tail = f"; it confirms {', '.join(explained[index])}"
        else:
            codes = [code for code, signature in CRASH_SIGNATURES.items() if signature.search(_text(e))]
            tail = f" (the failure {' / '.join(codes)} describes)" if codes else ""
        out.append((e.get("site"), f"the program crashed: {describe(e, cwd)}{tail}"))
    return out
