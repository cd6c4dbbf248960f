"""`torchlint run` findings in every output format of `check`: static findings carry their
runtime verdict, runtime-only checks render with their own rule metadata. No torch needed."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from test_outputs import SCHEMA_PATH
from torchlint.diagnostics import Finding
from torchlint.output import FORMATS
from torchlint import catalog
from torchlint.records import RuntimeResult

EVIDENCE = "at step 0, grad mode was off at the call; backward raised RuntimeError: element 0 ..."


def findings(tmp_path: Path) -> list[Finding]:
    (tmp_path / "train.py").write_text("import torch\nloss.backward()\nwith x:\n    pass\n", encoding="utf-8")
    static = Finding(code="TL101", name="backward-under-no-grad", message="`loss.backward()` under no_grad",
                     path="train.py", row=2, col=1, end_row=2, end_col=16, severity="error",
                     runtime=RuntimeResult("confirmed", EVIDENCE, 1))
    check = catalog.by_code()["TL320"]
    message = "2 DataLoader workers drew identical first values from numpy.random (e.g. [0.5, 0.1])"
    runtime_only = Finding(code=check.code, name=check.name, message=message, path="train.py", row=3, col=1,
                           end_row=3, end_col=8, severity=check.severity,
                           runtime=RuntimeResult("confirmed", message, 1))
    return [static, runtime_only]


def render(fmt: str, tmp_path: Path) -> str:
    return FORMATS[fmt](findings(tmp_path), {}, errors=[], cwd=tmp_path, quiet=False)


def test_json_carries_the_runtime_object(tmp_path):
    static, runtime_only = json.loads(render("json", tmp_path))
    assert static["runtime"] == {"verdict": "confirmed", "evidence": EVIDENCE, "hits": 1}
    assert runtime_only["code"] == "TL320" and runtime_only["runtime"]["verdict"] == "confirmed"
    assert runtime_only["url"].endswith("rules_docs/TL320-identical-worker-random-streams.md")


def test_json_of_check_has_no_runtime_key(tmp_path):
    plain = Finding(code="TL101", message="m", path="a.py", row=1, col=1, end_row=1, end_col=2)
    assert "runtime" not in json.loads(FORMATS["json"]([plain], {}))[0]


def test_sarif_validates_with_runtime_checks(tmp_path):
    doc = json.loads(render("sarif", tmp_path))
    jsonschema.validate(doc, json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))
    run = doc["runs"][0]
    rules = {r["id"]: r for r in run["tool"]["driver"]["rules"]}
    assert rules["TL320"]["name"] == "identical-worker-random-streams"
    assert "## Use instead" in rules["TL320"]["help"]["markdown"]
    assert run["results"][0]["properties"]["runtime"]["evidence"] == EVIDENCE


def test_text_and_github_show_the_verdict_once(tmp_path):
    full = render("full", tmp_path)
    assert f"  runtime: confirmed: {EVIDENCE}" in full
    assert full.count("identical first values") == 1  # a runtime check's message is its evidence
    concise = render("concise", tmp_path).splitlines()
    assert concise[0].endswith(f"[runtime: confirmed: {EVIDENCE}]")
    github = render("github", tmp_path).splitlines()
    assert github[0].startswith("::error file=train.py,line=2,") and "[runtime: confirmed: at step 0" in github[0]
    assert github[1].startswith("::error file=train.py,line=3,") and "runtime:" not in github[1]
