"""`--verify`, rule by rule: each rule's expectations live with its fixtures, in
`tests/fixtures/<code>/verify/`, and these tests iterate over every rule.

- `probe.json`: the fact probe's expected verdicts, `[{"facts", "verdict", "evidence"?,
  "without_cuda"?}]`, run in the real worker. A probed rule without the file must demonstrate
  with no facts at all.
- `*.py`: verify cases, whose first comment lines say what --verify must make of the folder's
  rule in them:
  - `# verify: <verdict>[|<verdict>...]` (every finding of that rule), or `# verify: no finding`;
  - `# verify-evidence: <text>` (repeatable): text every such verdict's evidence contains;
  - `# verify-at: <text>`: the finding is placed by hand on the first line holding <text>
    (a rule's real findings on harmless code can be rare) instead of coming from the linter;
  - `# label: harmful|harmless`: a held-out style case, labelled by running it
    (tests/verify_label.py); harmless ones are never `confirmed`.

A rule without a probe is `skipped` with its `evidence.reason`. Needs torch (CPU is enough)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

from torchlint import catalog  # noqa: E402
from torchlint.diagnostics import Finding  # noqa: E402
from torchlint.verify import runner  # noqa: E402
from torchlint.verify.plan import PROBED  # noqa: E402
from torchlint.verify.runner import ProbeWorker  # noqa: E402

pytestmark = pytest.mark.torch

FIXTURES = Path(__file__).parent / "fixtures"
CASES = sorted(FIXTURES.glob("TL*/verify/*.py"))


def _header(path: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        found = re.match(r"# (verify|verify-evidence|verify-at|label): (.*)$", line)
        if found:
            out.setdefault(found.group(1), []).append(found.group(2).strip())
    return out


def _code(path: Path) -> str:
    return path.parent.parent.name


def _case_id(path: Path) -> str:
    return path.relative_to(FIXTURES).as_posix()


# -- fact probes -------------------------------------------------------------------------
def _probe_expectations() -> list[tuple[str, dict]]:
    out = []
    for code in sorted(PROBED):
        spec = FIXTURES / code / "verify" / "probe.json"
        entries = json.loads(spec.read_text()) if spec.exists() else [{"facts": {}, "verdict": "demonstrated"}]
        out += [(code, entry) for entry in entries]
    return out


PROBE_EXPECTATIONS = _probe_expectations()


@pytest.fixture(scope="module")
def worker():
    w = ProbeWorker(timeout=240, limit_memory=True)
    w.start()
    yield w
    w.stop()


@pytest.mark.parametrize("code, entry", PROBE_EXPECTATIONS,
                         ids=[f"{c}-{i}" for i, (c, _) in enumerate(PROBE_EXPECTATIONS)])
def test_fact_probe(worker, code, entry):
    import torch

    if entry.get("without_cuda") and torch.cuda.is_available():
        pytest.skip("the expectation holds on a machine without CUDA")
    result = worker.run({"code": code, "facts": entry["facts"], "slice": None, "device": "cpu"})
    assert result["verdict"] == entry["verdict"], result
    assert result["evidence"].startswith("probe"), result  # never passed off as the user's run
    for text in entry.get("evidence", ()):
        assert text in result["evidence"], (text, result)


def test_probe_expectations_name_probed_rules_only():
    for spec in FIXTURES.glob("TL*/verify/probe.json"):
        assert spec.parent.parent.name in PROBED, spec


def test_every_fact_a_rule_reports_is_read_by_its_evidence():
    """A key of a rule's `params={...}` that neither its probe nor its judge reads is a fact
    nobody uses (or a misspelt one)."""
    import ast
    import inspect

    checked = 0
    for rule in catalog.static_rules():
        if rule.evidence.probe is None:
            continue
        module = sys.modules[rule.__module__]
        readers = "".join(inspect.getsource(f) for f in (rule.evidence.probe, rule.evidence.judge) if f)
        for call in ast.walk(ast.parse(inspect.getsource(module))):
            for kw in getattr(call, "keywords", []):
                if kw.arg == "params" and isinstance(kw.value, ast.Dict):
                    for key in kw.value.keys:
                        if isinstance(key, ast.Constant):
                            checked += 1
                            assert f'"{key.value}"' in readers, (rule.code, key.value)
    assert checked > 10  # the walk finds the rules' facts at all


# -- verify cases ------------------------------------------------------------------------
def _located(path: Path, needle: str) -> Finding:
    lines = path.read_text(encoding="utf-8").splitlines()
    row = next(i for i, line in enumerate(lines, 1) if needle in line and not line.startswith("#"))
    col = lines[row - 1].index(needle) + 1
    return Finding(code=_code(path), message="m", path=str(path), row=row, col=col, end_row=row,
                   end_col=col + len(needle), probe_params={})


@pytest.fixture(scope="module")
def case_verdicts() -> dict[str, list[tuple[str, str, str]]]:
    """Each case's findings as (code, verdict, evidence): linted and verified through the CLI
    (default rules plus every rule with cases), or placed by hand and verified directly."""
    from click.testing import CliRunner

    from torchlint.cli import main

    linted = [p for p in CASES if "verify-at" not in _header(p)]
    codes = sorted({_code(p) for p in CASES})
    result = CliRunner().invoke(main, ["check", *map(str, linted), "--isolated", "--no-cache", "--verify",
                                       "--device", "cpu", "--extend-select", ",".join(codes),
                                       "--output-format", "json"], catch_exceptions=False)
    verdicts: dict[str, list[tuple[str, str, str]]] = {_case_id(p): [] for p in CASES}
    for f in json.loads(result.stdout):
        verdicts[_case_id(Path(f["filename"]))].append(
            (f["code"], f["verify"]["verdict"], f["verify"]["runs"][0]["evidence"]))
    placed = [_located(p, _header(p)["verify-at"][0]) for p in CASES if "verify-at" in _header(p)]
    texts = {f.path: Path(f.path).read_text(encoding="utf-8") for f in placed}
    runner.verify_findings(placed, device="cpu", timeout=120, sources=texts.get)
    for f in placed:
        verdicts[_case_id(Path(f.path))].append((f.code, f.verify["verdict"], f.verify["runs"][0]["evidence"]))
    return verdicts


@pytest.mark.parametrize("path", CASES, ids=_case_id)
def test_verify_case(case_verdicts, path):
    header, code = _header(path), _code(path)
    assert header.get("verify"), f"{path}: no `# verify:` line"
    got = [(v, e) for c, v, e in case_verdicts[_case_id(path)] if c == code]
    if header["verify"][0] == "no finding":
        assert got == [], got
        return
    allowed = header["verify"][0].split("|")
    assert got and all(v in allowed for v, _ in got), (allowed, got)
    rule = catalog.by_code()[code]
    for _, evidence in got:
        for text in header.get("verify-evidence", ()):
            assert text in evidence, (text, evidence)
        if rule.evidence.probe is None:
            assert evidence == rule.evidence.reason, evidence


def test_held_out_style_cases_are_labelled_by_running_them():
    out = subprocess.run([sys.executable, str(Path(__file__).parent / "verify_label.py")], capture_output=True,
                         text=True, check=True)
    labels = json.loads(out.stdout)
    assert len(labels) >= 40  # the held-out style cases were found
    for name, label in labels.items():
        assert _header(FIXTURES / name)["label"] == [label], name


def test_held_out_style_cases_harmless_never_confirmed_harmful_mostly_confirmed(case_verdicts):
    harmful = confirmed = 0
    for path in CASES:
        label = _header(path).get("label")
        if not label:
            continue
        got = [v for _, v, _ in case_verdicts[_case_id(path)]]
        if label == ["harmless"]:
            assert "confirmed" not in got, (path.name, got)
        else:
            harmful += 1
            confirmed += "confirmed" in got
    assert harmful and confirmed / harmful >= 0.8, (confirmed, harmful)
