"""TL020: a runtime check of `torchlint run`. A crash is a result: the exception that ended a
process of the program becomes a finding at the user's frame it was raised through, and
confirms the static findings whose documented failure it is (each rule's `evidence.crash`)."""

from __future__ import annotations

import os
import re

from torchlint.diagnostics import Finding
from torchlint.records import RuntimeResult
import torchlint.runtime.judging as run
from torchlint.runtime.checks import RuntimeCheck

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional
    from pathlib import Path


class ProgramCrashed(RuntimeCheck):
    """Runtime-only check: reported by `torchlint run`.

    ## What it does
    Reports the exception that ended a process of the program (the script, a `torchrun` rank, a
    forked or spawned trainer): the exception and its message, the innermost frame of your code it
    was raised through (the finding's location, with the function), the rank, and how many
    optimizer steps that process had done. When the exception is the documented failure of a
    static finding on a line of that traceback (for example {rule:backward-under-no-grad}'s
    `element 0 of tensors does not require grad`, {rule:label-float-cast}'s `expected target dtype
    to be Long`, {rule:unsafe-torch-load}'s `UnpicklingError` of a weights-only `torch.load`),
    that finding is reported `confirmed` with the exception as its evidence, and TL020 names it;
    without one, TL020 names the rule whose failure it matches, and a runtime check that reported
    the line the program died at ({rule:label-unusable-by-loss}'s out-of-range labels).

    Crashes Python's `sys.excepthook` never sees count too: an exception in a `multiprocessing`
    child, one under the program's own excepthook, a traceback that a DataLoader worker or a
    `torch.multiprocessing.spawn` child sends its parent as text (TL020 is at the child's line), a
    fatal signal such as a segfault (the frames of `faulthandler`'s dump) and a kill nothing in
    the program can see (SIGKILL, as the OOM killer sends it; no frame).

    ## Why is this bad?
    A crashed run judged nothing after the crash, and a report that reads "All checks passed!"
    over a traceback is read as a pass, in CI above all. The exception belongs in the report, at
    your line, next to the finding that predicted it. The exit code of `torchlint run` stays the
    program's (1 for an uncaught Python exception).

    ## Example
    ```python
    with torch.no_grad():
        val_loss = F.cross_entropy(model(x), y)
        val_loss.backward()  # RuntimeError: element 0 of tensors does not require grad
    ```

    ## Use instead
    ```python
    with torch.no_grad():
        val_loss = F.cross_entropy(model(x), y)  # evaluation only: no backward
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [sys.excepthook](https://docs.python.org/3/library/sys.html#sys.excepthook)
    - [torch.load and weights_only](https://pytorch.org/docs/stable/generated/torch.load.html)
    """

    code = "TL020"
    name = "program-crashed"
    summary = "The program ended with an uncaught exception: the exception, its frame and the step"
    seen = "the exception that ended a process: its message, your frame, the step; it confirms the static finding it is"
    one_per_site = False  # every distinct crash (crash_events dedupes): two ranks may fail at one line differently

    @classmethod
    def problems(cls, obs: run.Observation, static: list[Finding], cwd: Path) -> list[run.RuntimeProblem]:
        """One finding per crash; the static findings it is the hazard of are confirmed in place."""
        crashes = crash_events(obs.by_kind["crash"])
        explained = confirm_by_crash(static, crashes, cwd)
        return [run.RuntimeProblem(cls.code, site, message) for site, message in crash_messages(crashes, explained, cwd)]


def _signatures() -> list[tuple[str, re.Pattern[str]]]:
    """(code, the error its hazard raises) of each static rule that declares one, in code order."""
    from torchlint import catalog  # not at import time: the catalog imports this module

    return [(r.code, re.compile(r.evidence.crash)) for r in catalog.static_rules() if r.evidence.crash]


def crash_events(events: list[run.Event]) -> list[run.Event]:
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


def _text(e: run.Event) -> str:
    return " ".join([f"{e.get('exception')}: {e.get('message')}", *(e.get("detail") or [])])


def describe(e: run.Event, cwd: Path) -> str:
    text = (f"{e['exception']}: {e['message']}" if e.get("message") else e["exception"]).rstrip(" .")
    if e.get("detail"):
        text += f" ({'; '.join(d.strip(' .:-') for d in e['detail'])})"
    verb = " at" if e.get("verb") == "signal" else ", raised in"  # a fatal signal is not raised
    where = f"{verb} `{e['site'][2]}` ({run.where(e['site'], cwd)})" if e.get("site") else ""
    rank = f" in rank {e['rank']}" if e.get("world", 1) > 1 else ""
    return f"{text}{where}{rank} after {e['step']} optimizer step(s)"


def _through(frames: list[list], path: str, rows: run.Rows) -> Optional[list]:
    """The frame of the traceback at the flagged lines, or else one later in the same function
    (a label cast a line before the loss that rejects it)."""
    for frame in reversed(frames):
        if frame[0] == path and rows[0] <= frame[1] <= rows[1]:
            return frame
    for frame in reversed(frames):
        if frame[0] == path and frame[3] <= rows[0] <= frame[1]:
            return frame
    return None


def confirm_by_crash(findings: list[Finding], crashes: list[run.Event], cwd: Path) -> dict[int, list[str]]:
    """Confirm (in place) the static findings whose hazard a crash is. Returns, per crash index,
    the findings it confirmed, for the message."""
    signatures = dict(_signatures())
    explained: dict[int, list[str]] = {}
    for f in findings:
        signature = signatures.get(f.code)
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


def crash_messages(crashes: list[run.Event], explained: dict[int, list[str]],
                   cwd: Path) -> list[tuple[Optional[list], str]]:
    """(site, message) of each finding."""
    out = []
    for index, e in enumerate(crashes):
        if index in explained:
            tail = f"; it confirms {', '.join(explained[index])}"
        else:
            codes = [code for code, signature in _signatures() if signature.search(_text(e))]
            tail = f" (the failure {' / '.join(codes)} describes)" if codes else ""
        out.append((e.get("site"), f"the program crashed: {describe(e, cwd)}{tail}"))
    return out


def name_runtime_causes(problems: list[run.RuntimeProblem]) -> None:
    """A crash at a line where a runtime check reported a problem (TL221's labels out of range at
    the loss that raised `Target 5 is out of bounds`) names that finding (in place)."""
    for crash in problems:
        if crash.code != ProgramCrashed.code or not crash.site:
            continue
        causes = sorted({p.code for p in problems if p.code != crash.code and p.site and p.site[:2] == crash.site[:2]})
        if causes:
            crash.message += f"; {', '.join(causes)} reported this line"
