"""What each finding gets under `--verify`: a program slice of the user's own code (when it
can run in isolation), the rule's fact probe, or a `skipped` verdict with the reason.

The slice is derived here, in the parent, from a fresh parse of the file as it is now:
never from the lint cache. Facts are the finding's plain probe_params, re-checked (exact
types, bounded length) because they may come from the cache."""

from __future__ import annotations

import ast
import hashlib
import json
from dataclasses import dataclass, replace
from pathlib import Path

from torchlint.diagnostics import Finding
from torchlint import catalog
from torchlint.verify.instrument import SLICES
from torchlint.verify.checkpoints import checkpoint_shape
from torchlint.verify.program import MAX_MEMBERS, batch_spec, program_spec
from torchlint.verify.project import IMPORTED, NotImportable, ProjectTree, plan_import
from torchlint.verify.project import USES_PROJECT as _USES
from torchlint.verify.slicer import NotSelfContained, Slice, build

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional

# A rule whose `evidence` has a probe (the worker's copy is in evidence_index.py); the others
# give the reason they cannot be shown on a machine.
PROBED = frozenset(r.code for r in catalog.static_rules() if r.evidence.probe is not None)
# Rules whose verdict may read the project: an import (IMPORTED), TL601's saves, or the file
# run as its program (a probed rule with a slice: verify/program.py).
USES_PROJECT = _USES | frozenset(r.code for r in catalog.static_rules()
                                 if r.evidence.slice and r.evidence.probe is not None)
_MAX_FACT = 200
_HERE = Path(__file__).resolve().parent
# The code that decides a verdict: a change to any of it invalidates cached verdicts.
_VERDICT_CODE = (*sorted(p.name for p in _HERE.glob("evidence_*.py")), "_evidence.py", "slices.py", "safety.py",
                 "reachable.json", "_worker.py", "_launch.py", "sandbox.py", "_landlock.py", "_seccomp.py", "_frames.py",
                 "slicer.py", "dataflow.py", "callsites.py", "checkpoints.py", "instrument.py", "plan.py", "project.py",
                 "_project.py", "_forkserver.py", "program.py")


def verdict_code_hash() -> str:
    digest = hashlib.sha256()
    for name in _VERDICT_CODE:
        digest.update(name.encode() + b"\0" + (_HERE / name).read_bytes() + b"\0")
    return digest.hexdigest()


@dataclass(frozen=True)
class ProbeRequest:
    code: str
    facts: tuple[tuple[str, Any], ...]
    variants: tuple[str, ...] = ()  # instrumented slice sources; empty: fact probe only
    stop: str = "flag"
    not_self_contained: str = ""
    grads: bool = False
    observe: tuple[tuple[str, str], ...] = ()  # names from the slice the judge needs
    # `file:line` of what of the user's code the request runs (the verdict's `ran`); not sent
    ran: tuple[str, ...] = ()
    imported: str = ""  # JSON of project.ImportPlan: observe the user's object, imported from the project

    @property
    def program(self) -> Optional[dict[str, Any]]:
        """The spec of the program run this request is a member of (batch_programs), if any."""
        spec = json.loads(self.imported) if self.imported else None
        return spec if isinstance(spec, dict) and spec.get("kind") == "program" and "members" in spec else None

    @property
    def import_kind(self) -> str:
        """What `imported` asks the worker for: "module", "program", "checkpoint", or ""."""
        spec = json.loads(self.imported) if self.imported else None
        return str(spec.get("kind") or "") if isinstance(spec, dict) else ""

    @property
    def needs_project(self) -> bool:
        return self.import_kind in ("module", "program")

    def as_json(self) -> dict[str, Any]:
        spec = {"variants": list(self.variants), "stop": self.stop, "grads": self.grads,
                "observe": dict(self.observe)} if self.variants else None
        out = {"code": self.code, "facts": dict(self.facts), "slice": spec,
               "not_self_contained": self.not_self_contained}
        return dict(out, **{"import": json.loads(self.imported)}) if self.imported else out

    def identity(self) -> str:
        return json.dumps(self.as_json(), sort_keys=True)


def clean_facts(params: Any) -> tuple[tuple[str, Any], ...]:
    """Plain, bounded facts only: anything else (from a tampered cache) is dropped."""
    if type(params) is not dict:
        return ()
    out = []
    for k, v in params.items():
        if type(k) is str and len(k) <= 40 and type(v) in (str, int, float, bool):
            if type(v) is str and len(v) > _MAX_FACT:
                continue
            if type(v) is int and abs(v) > 2**31:
                continue
            out.append((k, v))
    return tuple(sorted(out)[:16])


def plan(finding: Finding, source: Optional[str]) -> tuple[Optional[ProbeRequest], Optional[str]]:
    """(request, None) to run something, or (None, reason) for `skipped`: a slice of the
    file, else the rule's probe (which `with_project` may turn into a look at the project's
    own objects)."""
    code = finding.code
    rule = catalog.static_rule(code)
    if rule is None:
        return None, "no such rule"
    facts = clean_facts(finding.probe_params)
    spec = SLICES[rule.evidence.slice] if rule.evidence.slice else None
    why_not = ""
    if spec is not None:
        if source is None:
            why_not = "the source is not available"
        else:
            try:
                sl = build(source, finding.row, finding.col, finding.end_row, finding.end_col,
                           related=spec.related, extra_seed=spec.extra_seed, construct=spec.construct)
                observe = tuple(sorted(spec.observe(sl).items())) if spec.observe else ()
                modules = spec.instrument(sl)
                if modules:
                    variants = tuple(ast.unparse(m) for m in modules)
                    return ProbeRequest(code, facts, variants, spec.stop, grads=spec.grads, observe=observe,
                                        ran=_ran(finding.path, sl)), None
                why_not = "the flagged code has no observable call in the slice"
            except NotSelfContained as exc:
                why_not = str(exc)
            except (RecursionError, MemoryError, ValueError):
                why_not = "the code could not be sliced"
    if code not in PROBED:
        reason = rule.evidence.reason or "no probe"
        return None, f"{reason}; the flagged code could not run in isolation ({why_not})" if why_not else reason
    return ProbeRequest(code, facts, (), "flag", why_not), None


def with_project(request: ProbeRequest, finding: Finding, source: Optional[str],
                 project: Optional[ProjectTree]) -> ProbeRequest:
    """A probe request, refined by what the project says: TL601 loads an object of the shape
    the project saves for that file; a rule with an observer (IMPORTED) looks at the user's
    own object, its module imported from the project. A slice is left as it is."""
    if request.variants or source is None:
        return request
    if finding.code == "TL601":
        return _checkpoint_request(finding, source, project, request.facts) or request
    if project is not None and finding.code not in IMPORTED:
        return _program_request(request, finding, source, project)
    if project is None:
        return request
    try:
        found = plan_import(finding, project)
    except NotImportable as exc:
        why_not = request.not_self_contained
        return replace(request, not_self_contained=f"{why_not}; nor can it be imported: {exc}" if why_not
                       else f"it cannot be imported: {exc}")
    return ProbeRequest(finding.code, request.facts, ran=found.ran, imported=json.dumps(found.as_json(project.digest)))


def _program_request(request: ProbeRequest, finding: Finding, source: str, project: ProjectTree) -> ProbeRequest:
    """The file run as its program up to the flagged line (verify/program.py), for a rule
    whose slice could not run on its own; its probe stays the fallback."""
    rule = catalog.static_rule(finding.code)
    if rule is None or not rule.evidence.slice:
        return request
    try:
        spec, ran = program_spec(finding, source, SLICES[rule.evidence.slice], project,
                                 finding.path.endswith(".ipynb"))
    except NotSelfContained as exc:
        return replace(request, not_self_contained=f"{request.not_self_contained}; nor can its program run: {exc}")
    except (RecursionError, MemoryError, ValueError, SyntaxError):
        return request
    return replace(request, ran=ran, imported=json.dumps(spec))


def batch_programs(planned: list[tuple[Finding, Optional[ProbeRequest]]], text: Optional[str],
                   project: Optional[ProjectTree]) -> dict[int, ProbeRequest]:
    """The program requests of one file's findings (by index in `planned`), made one run of
    the program for all of them (program.batch_spec): a notebook's findings share the run of
    its cells up to the last of their cells. A finding whose instrumentation does not fit
    beside the others' gets a run of its own."""
    if text is None or project is None:
        return {}
    items = []
    for i, (finding, request) in enumerate(planned):
        single = json.loads(request.imported) if request is not None and request.imported else {}
        if request is None or single.get("kind") != "program" or len(single.get("variants", ())) != 1:
            continue
        view = notebook_view(finding, text) if finding.cell is not None else (finding, text)
        rule = catalog.static_rule(finding.code)
        if view is not None and rule is not None and rule.evidence.slice:
            items.append((i, view[0], view[1], request, SLICES[rule.evidence.slice], single))
    out: dict[int, ProbeRequest] = {}
    while items:
        # The longest program first: a notebook's shorter ones are its prefixes.
        items.sort(key=lambda item: -len(item[2]))
        source = items[0][2]
        group = [item for item in items if source.startswith(item[2])][:MAX_MEMBERS]
        spec, held = batch_spec([(view, rule, dict(request.facts)) for _, view, _, request, rule, _ in group], source,
                                group[0][5]["file"], group[0][5]["path"], project.digest)
        for k, member in enumerate(held):
            out[group[member][0]] = replace(group[member][3], imported=json.dumps(dict(spec, member=k)))
        # The first member is instrumented on the untouched program, as when it was planned
        # alone, so this guard only keeps the loop finite.
        failed = [] if held else [group[0]]
        for i, _, _, request, _, _ in failed:
            out[i] = replace(request, imported="", not_self_contained=f"{request.not_self_contained}; nor can its "
                             "program run: the flagged code has no observable call")
        done = {group[m][0] for m in held} | {item[0] for item in failed}
        items = [item for item in items if item[0] not in done]
    return out


def _checkpoint_request(finding: Finding, source: str, project: Optional[ProjectTree],
                        facts: tuple[tuple[str, Any], ...]) -> Optional[ProbeRequest]:
    """TL601: load an object of the shape the project's own `torch.save` calls store for the
    file this load reads (verify/checkpoints.py), as the flagged call loads it."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    load = next((n for n in ast.walk(tree) if isinstance(n, ast.Call) and n.lineno == finding.row
                 and n.col_offset == finding.col - 1), None)
    if load is None:
        return None
    rel = project.relative(finding.path) if project is not None else None
    trees = [(finding.path, tree)] if rel is None or project is None else \
        [(r, t) for r in sorted(project.files) for t in [project.tree(r)] if t is not None]
    found = checkpoint_shape(load, trees)
    if found is None:
        return None
    spec = {"kind": "checkpoint", "shape": found[0], "saved_at": found[1]}
    return ProbeRequest(finding.code, facts, imported=json.dumps(spec))


def _ran(path: str, sl: Slice) -> tuple[str, ...]:
    """`file:line` of the functions and classes the slice defines, then the flagged statement."""
    lines = [n.lineno for n in sl.module.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    lines.append(sl.statement.lineno)
    return tuple(f"{path}:{line}" for line in dict.fromkeys(lines))[:16]


def notebook_view(finding: Finding, text: str) -> Optional[tuple[Finding, str]]:
    """A notebook finding as a finding on its program: the code cells up to the finding's,
    IPython syntax blanked as the linter blanks it, and a cell that does not parse blanked
    (the kernel would have stopped there; the linter reports it as TL000)."""
    from torchlint.notebook import (NotebookError, indent_shift, leading_indent, parse_notebook, python_lines,
                                    written_python)

    try:
        notebook = parse_notebook(finding.path, text.encode("utf-8", "surrogatepass"))
    except NotebookError:
        return None
    lines: list[str] = []
    for cell in notebook.cells:
        module = written_python(cell.lines) if cell.number == finding.cell else None
        if module is not None:  # a `%%writefile x.py` cell: the file it writes, on its own
            return (replace(finding, row=finding.row - 1, end_row=finding.end_row - 1, cell=None),
                    "".join(line + "\n" for line in module))
        body = python_lines(cell.lines)
        try:
            ast.parse("\n".join(body) + "\n")
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            body = [""] * len(body)
        if cell.number == finding.cell:
            shift = len(lines)
            lines.extend(body)
            # Columns count in the cell as written; the program has its leading indent stripped.
            indent = leading_indent(cell.lines)
            cols = [indent_shift(cell.lines[r - 1], indent) if 0 < r <= len(cell.lines) else 0
                    for r in (finding.row, finding.end_row)]
            return (replace(finding, row=finding.row + shift, end_row=finding.end_row + shift, cell=None,
                            col=finding.col - cols[0], end_col=finding.end_col - cols[1]),
                    "".join(line + "\n" for line in lines))
        lines.extend(body)
    return None
