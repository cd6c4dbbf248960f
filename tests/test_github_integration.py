"""GitHub code scanning: SARIF paths relative to the repository root from any directory,
single-line regions, every enabled rule, the 25,000-result cap, plain-text fields; the
`github` annotation format; the shipped workflow. When the Microsoft SARIF Multitool is
installed (npm @microsoft/sarif-multitool), its GitHub rules run too."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest

from test_cli import BAD, write
from torchlint.output import sarif as sarif_output
from torchlint import catalog

REPO = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-2.1.0.json").read_text(encoding="utf-8"))
WORKFLOW = REPO / ".github" / "workflows" / "torchlint.yml"
MULTILINE = "import torch.nn as nn\n\n\nclass Stack(nn.Module):\n    def __init__(self):\n        self.n = 2\n        self.fc = nn.Linear(2, 2)\n"


@pytest.fixture
def repo(tmp_path):
    """A git repository with a bad file in a subdirectory and one at the top."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    write(tmp_path, "pkg/sub/bad.py", BAD)
    write(tmp_path, "pkg/sub/stack.py", MULTILINE)
    write(tmp_path, "top.py", BAD)
    write(tmp_path, "torchlint.toml", 'extend-select = ["TL102"]\n')  # BAD's TL102 is off by default
    return tmp_path


def _sarif(run_cli, *args, cwd):
    code, out, err = run_cli("check", *args, "--output-format", "sarif", cwd=cwd)
    doc = json.loads(out)
    jsonschema.validate(doc, SCHEMA)
    return code, doc, err


def _uris(doc):
    return sorted({r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in doc["runs"][0]["results"]})


def test_sarif_from_a_subdirectory_is_repository_relative(repo, run_cli):
    code, doc, _ = _sarif(run_cli, ".", "../../top.py", cwd=repo / "pkg" / "sub")
    assert code == 1
    run = doc["runs"][0]
    assert _uris(doc) == ["pkg/sub/bad.py", "pkg/sub/stack.py", "top.py"]
    for result in run["results"]:
        assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == repo.resolve().as_uri() + "/"
    assert run["invocations"][0]["workingDirectory"]["uri"] == (repo / "pkg" / "sub").resolve().as_uri() + "/"


def test_project_root_overrides_the_git_root(repo, run_cli):
    _, doc, _ = _sarif(run_cli, "sub", "--project-root", ".", cwd=repo / "pkg")
    assert _uris(doc) == ["sub/bad.py", "sub/stack.py"]
    assert doc["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]["uri"] == (repo / "pkg").resolve().as_uri() + "/"


def test_file_outside_the_root_gets_an_absolute_uri(repo, tmp_path_factory, run_cli):
    outside = tmp_path_factory.mktemp("elsewhere")
    write(outside, "o.py", BAD)
    _, doc, _ = _sarif(run_cli, str(outside / "o.py"), cwd=repo)
    assert _uris(doc) == [(outside / "o.py").resolve().as_uri()]


def test_regions_are_single_line_with_the_span_in_related_locations(repo, run_cli):
    _, doc, _ = _sarif(run_cli, "pkg/sub/stack.py", "--select", "TL702", cwd=repo)
    [result] = doc["runs"][0]["results"]
    region = result["locations"][0]["physicalLocation"]["region"]
    assert region["startLine"] == region["endLine"] == 5
    assert region["endColumn"] > region["startColumn"]
    [related] = result["relatedLocations"]
    span = related["physicalLocation"]["region"]
    assert span["startLine"] == 5 and span["endLine"] == 7
    for result in json.loads(run_cli("check", ".", "--output-format", "sarif", cwd=repo)[1])["runs"][0]["results"]:
        r = result["locations"][0]["physicalLocation"]["region"]
        assert r["startLine"] == r["endLine"]


def test_every_enabled_rule_is_listed_and_indices_match(repo, run_cli):
    _, doc, _ = _sarif(run_cli, "top.py", "--extend-select", "ALL", cwd=repo)
    driver = doc["runs"][0]["tool"]["driver"]
    assert [r["id"] for r in driver["rules"]] == sorted(r.code for r in catalog.static_rules())
    for result in doc["runs"][0]["results"]:
        assert driver["rules"][result["ruleIndex"]]["id"] == result["ruleId"]
    _, doc, _ = _sarif(run_cli, "top.py", "--select", "TL101", cwd=repo)
    assert [r["id"] for r in doc["runs"][0]["tool"]["driver"]["rules"]] == ["TL101"]


def test_text_fields_are_plain_text_and_descriptions_end_on_a_sentence(repo, run_cli):
    _, doc, _ = _sarif(run_cli, ".", "--extend-select", "ALL", cwd=repo)
    run = doc["runs"][0]
    markdown = re.compile(r"`|\*\*[^*\s][^*]*\*\*|\]\(|^#", re.MULTILINE)  # code spans, bold, links, headings
    for rule in run["tool"]["driver"]["rules"]:
        for field in ("shortDescription", "fullDescription"):
            assert not markdown.search(rule[field]["text"]), (rule["id"], field)
        assert not markdown.search(rule["help"]["text"]), rule["id"]
        full = rule["fullDescription"]["text"]
        assert len(full) <= 1024 and full.endswith((".", "!", "?", ")", "\u2026")), (rule["id"], full[-40:])
    assert run["results"]
    for result in run["results"]:
        assert "`" not in result["message"]["text"]
        if "`" in result["message"].get("markdown", ""):
            shown = re.sub(r"\\(.)", r"\1", result["message"]["markdown"].split("\n")[0].replace("`", ""))
            assert shown == result["message"]["text"].split("\n")[0]


def test_result_cap_drops_extra_results_with_a_warning_and_a_notification(repo, run_cli, monkeypatch):
    monkeypatch.setattr(sarif_output, "MAX_RESULTS", 3)
    code, doc, err = _sarif(run_cli, ".", cwd=repo)
    run = doc["runs"][0]
    assert code == 1 and len(run["results"]) == 3
    assert "exceed GitHub code scanning's limit of 3 results" in err
    notes = [n for n in run["invocations"][0]["toolExecutionNotifications"] if n["level"] == "warning"]
    assert len(notes) == 1 and "only the first 3" in notes[0]["message"]["text"]
    monkeypatch.setattr(sarif_output, "MAX_RESULTS", 25_000)
    code, doc, err = _sarif(run_cli, ".", cwd=repo)
    assert "limit" not in err and len(doc["runs"][0]["results"]) == 5


def test_github_format_paths_are_repository_relative(repo, run_cli):
    out = run_cli("check", ".", "../../top.py", "--output-format", "github", cwd=repo / "pkg" / "sub")[1]
    files = sorted({re.search(r"file=([^,]*)", line).group(1) for line in out.splitlines()})
    assert files == ["pkg/sub/bad.py", "pkg/sub/stack.py", "top.py"]
    out = run_cli("check", "sub", "--project-root", ".", "--output-format", "github", cwd=repo / "pkg")[1]
    assert sorted({re.search(r"file=([^,]*)", line).group(1) for line in out.splitlines()}) == ["sub/bad.py", "sub/stack.py"]


def test_github_annotation_of_a_multi_line_span_is_its_first_line(repo, run_cli):
    out = run_cli("check", "pkg/sub/stack.py", "--select", "TL702", "--output-format", "github", cwd=repo)[1]
    [line] = out.splitlines()
    assert line.startswith("::warning file=pkg/sub/stack.py,line=5,col=5,title=") or \
        line.startswith("::error file=pkg/sub/stack.py,line=5,col=5,title=")
    assert "endLine" not in line


@pytest.mark.parametrize("fmt", ["sarif", "github"])
def test_statistics_with_a_machine_readable_format_is_refused(repo, run_cli, fmt):
    code, out, err = run_cli("check", ".", "--statistics", "--output-format", fmt, "-o", "report", cwd=repo)
    assert code == 2 and out == ""
    assert f"--statistics cannot be combined with --output-format {fmt}" in err
    assert not (repo / "report").exists()


# The workflow's steps (it uses action.yml) are run in test_action.py.
def test_workflow_matches_githubs_schema():
    check_jsonschema = shutil.which("check-jsonschema")
    if check_jsonschema is None:
        pytest.skip("check-jsonschema is not installed")
    proc = subprocess.run([check_jsonschema, "--builtin-schema", "vendor.github-workflows", str(WORKFLOW)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _multitool() -> str | None:
    found = os.environ.get("SARIF_MULTITOOL") or shutil.which("sarif-multitool")
    return found if found and os.access(found, os.X_OK) else None


def test_sarif_passes_the_multitool_github_rules(repo, run_cli, tmp_path_factory):
    tool = _multitool()
    if tool is None:
        pytest.skip("Microsoft SARIF Multitool not installed (npm install @microsoft/sarif-multitool; "
                    "set SARIF_MULTITOOL to its Sarif.Multitool binary)")
    out_dir = tmp_path_factory.mktemp("multitool")
    report = out_dir / "torchlint.sarif"
    code, out, _ = run_cli("check", ".", "../../top.py", "--extend-select", "ALL", "--output-format", "sarif",
                           "-o", str(report), cwd=repo / "pkg" / "sub")
    assert code == 1
    log = out_dir / "validation.sarif"
    proc = subprocess.run([tool, "validate", "--rule-kind", "Gh;Sarif", "--log", "ForceOverwrite",
                           "-o", str(log), str(report)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    problems = json.loads(log.read_text(encoding="utf-8-sig"))["runs"][0].get("results", [])
    assert [p for p in problems if p.get("level", "warning") in ("error", "warning")] == [], proc.stdout
