"""rules_docs/peer-parity.md, generated (scripts/generate_all.py loads this module by path):
the peers' checks come from scripts/peer_checks.toml, and which rule covers which check, with
what status, from each rule's `peer_checks` (`Rule.peer_checks`: the peer's code -> the status).

Also the `{rule:<name>}` references of hand-written text (rule docstrings, the data file),
rendered as a link to that rule's page, so that no hand-kept text spells another rule's code."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Union

from torchlint import catalog
from torchlint.diagnostics import TOOL_CODES, ToolCode

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib  # type: ignore[no-redef]

DATA = Path(__file__).with_name("peer_checks.toml")
REF = re.compile(r"\{rule:([a-z0-9-]+)\}")

Named = Union[catalog.Entry, ToolCode]


def _named(name: str) -> Named:
    found = catalog.by_name().get(name) or next((t for t in TOOL_CODES if t.name == name), None)
    if found is None:
        raise SystemExit(f"{{rule:{name}}}: no rule, runtime check or torchlint code has that name")
    return found


def link(entry: Named) -> str:
    """A link to the entry's page, from a page of rules_docs/."""
    return f"[{entry.code}]({entry.code}-{entry.name}.md)"


def render_refs(text: str) -> str:
    """`text` with each `{rule:<name>}` replaced by a link to that rule's page."""
    return REF.sub(lambda m: link(_named(m.group(1))), text)


def load(path: Path = DATA) -> dict[str, Any]:
    with path.open("rb") as fh:
        return tomllib.load(fh)


Covering = list[tuple[catalog.Entry, str]]  # (rule or runtime check, its status for the check)


def coverage() -> dict[str, Covering]:
    """Peer check -> (entry, its status) of every rule and runtime check covering it, in code order."""
    out: dict[str, Covering] = {}
    for entry in catalog.entries():
        for check, status in entry.peer_checks.items():
            if not status.startswith(("covered", "partly")):
                raise SystemExit(f"{entry.code}: peer_checks[{check!r}] must start with 'covered' or 'partly'")
            out.setdefault(check, []).append((entry, status))
    return out


def _tool_cell(entry: catalog.Entry) -> str:
    marks = [m for m, on in (("run", not catalog.is_static(entry)), ("off", not entry.default_enabled)) if on]
    return link(entry) + "".join(f" ({m})" for m in marks)


def _status(check: dict[str, Any], covering: Covering) -> str:
    """The status cell: the one rule's status, or the covering rules' statuses joined, each
    followed by its code ("covered: a (TL401), b (TL404)" when all share the word before ':')."""
    if len(covering) == 1:
        status = covering[0][1]
    else:
        kinds = {s.partition(":")[0] for _, s in covering}
        if len(kinds) == 1 and all(":" in s for _, s in covering):
            status = f"{kinds.pop()}: " + ", ".join(f"{s.partition(':')[2].strip()} ({e.code})" for e, s in covering)
        else:
            status = "; ".join(f"{s} ({e.code})" for e, s in covering)
    return status + (f"; {check['note']}" if check.get("note") else "")


def _row(check: dict[str, Any], covering: Covering) -> str:
    name = check["check"] + (f" {check['title']}" if check.get("title") else "")
    if covering and "status" in check:
        codes = ", ".join(e.code for e, _ in covering)
        raise SystemExit(f"peer_checks.toml: {check['check']} has a status, but {codes} covers it: drop one")
    if covering:
        tool, status = ", ".join(_tool_cell(e) for e, _ in covering), _status(check, covering)
    elif "status" in check:
        tool, status = check.get("torchlint", "none"), check["status"]
    else:
        raise SystemExit(f"peer_checks.toml: no rule covers {check['check']}, and it has no status (the reason)")
    return render_refs(f"| {name} | {check['reports']} | {tool} | {status} |")


def page(data: dict[str, Any]) -> str:
    covered = coverage()
    known = {c["check"] for peer in data["peer"] for c in peer["checks"]}
    unknown = sorted(set(covered) - known)
    if unknown:
        codes = sorted({e.code for check in unknown for e, _ in covered[check]})
        raise SystemExit(f"{', '.join(codes)}: peer_checks names {unknown}, which scripts/peer_checks.toml lacks")
    parts = [f"# {data['title']}", data["intro"].strip()]
    for peer in data["peer"]:
        rows = ["| check | what it reports | torchlint | status |", "| --- | --- | --- | --- |"]
        rows += [_row(c, covered.get(c["check"], [])) for c in peer["checks"]]
        parts += [f"## {peer['name']}", peer["about"].strip(), "\n".join(rows)]
    return render_refs("\n\n".join(parts)) + "\n"
