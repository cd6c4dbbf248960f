"""The CI output formats ruff also has (gitlab, junit, pylint, json-lines, rdjson, grouped,
azure), each checked against what its consumer reads: GitLab's Code Quality fields, the
JUnit XML structure, pylint/flake8's parseable line, JSON Lines, reviewdog's rdjson
(UTF-8 byte columns), ruff's grouped layout, Azure's logging-command escaping."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

from test_cli import BAD, CLEAN, write
from torchlint.diagnostics import Finding
from torchlint.output import FORMATS, azure, gitlab, junit, rdjson
from torchlint.records import Fix

NEW_FORMATS = ("gitlab", "junit", "pylint", "json-lines", "rdjson", "grouped", "azure")
BAD_FINDINGS = 2  # TL101 and TL102 in BAD

# GitLab's Code Quality report: the fields GitLab documents as required.
GITLAB_SCHEMA = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["description", "check_name", "fingerprint", "severity", "location"],
        "properties": {
            "description": {"type": "string", "minLength": 1},
            "check_name": {"type": "string", "minLength": 1},
            "fingerprint": {"type": "string", "minLength": 1},
            "severity": {"enum": ["info", "minor", "major", "critical", "blocker"]},
            "location": {
                "type": "object",
                "required": ["path", "lines"],
                "properties": {
                    "path": {"type": "string"},
                    "lines": {"type": "object", "required": ["begin"],
                              "properties": {"begin": {"type": "integer", "minimum": 1},
                                             "end": {"type": "integer", "minimum": 1}}},
                },
            },
        },
    },
}

# reviewdog's rdjson (proto/rdf/reviewdog.proto): positions from 1, the Severity enum's names.
_POSITION = {"type": "object", "required": ["line"],
             "properties": {"line": {"type": "integer", "minimum": 1}, "column": {"type": "integer", "minimum": 1}}}
_RANGE = {"type": "object", "required": ["start"], "properties": {"start": _POSITION, "end": _POSITION}}
_SEVERITY = {"enum": ["UNKNOWN_SEVERITY", "ERROR", "WARNING", "INFO"]}
RDJSON_SCHEMA = {
    "type": "object",
    "required": ["diagnostics"],
    "properties": {
        "source": {"type": "object", "required": ["name"]},
        "severity": _SEVERITY,
        "diagnostics": {"type": "array", "items": {
            "type": "object",
            "required": ["message", "location"],
            "properties": {
                "message": {"type": "string"},
                "location": {"type": "object", "required": ["path"],
                             "properties": {"path": {"type": "string"}, "range": _RANGE}},
                "severity": _SEVERITY,
                "code": {"type": "object", "required": ["value"],
                         "properties": {"value": {"type": "string"}, "url": {"type": "string"}}},
                "suggestions": {"type": "array", "items": {"type": "object", "required": ["range", "text"],
                                                           "properties": {"range": _RANGE, "text": {"type": "string"}}}},
            },
        }},
    },
}


def finding(**over) -> Finding:
    values = dict(code="TL101", message="msg", path="pkg/a.py", row=3, col=5, end_row=3, end_col=9,
                  severity="error", name="backward-under-no-grad")
    values.update(over)
    return Finding(**values)


@pytest.fixture
def repo(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    write(tmp_path, "pkg/bad.py", BAD)
    write(tmp_path, "pkg/clean.py", CLEAN)
    write(tmp_path, "torchlint.toml", 'extend-select = ["TL102"]\n')  # BAD's TL102 is off by default
    return tmp_path


def _check(run_cli, cwd, *args):
    code, out, err = run_cli("check", *args, cwd=cwd)
    assert code in (0, 1), err
    return code, out


def _json_findings(run_cli, cwd, *args):
    return json.loads(_check(run_cli, cwd, *args, "--output-format", "json")[1])


@pytest.mark.parametrize("fmt", NEW_FORMATS)
def test_every_format_is_registered(fmt, repo, run_cli):
    assert fmt in FORMATS
    code, out = _check(run_cli, repo, "pkg/bad.py", "--output-format", fmt)
    assert code == 1 and out


def test_gitlab_matches_code_quality_fields_with_repository_paths(repo, run_cli):
    _, out = _check(run_cli, repo / "pkg", "bad.py", "--output-format", "gitlab")
    issues = json.loads(out)
    jsonschema.validate(issues, GITLAB_SCHEMA)
    assert {i["location"]["path"] for i in issues} == {"pkg/bad.py"}  # root-relative from a subdirectory
    assert {(i["check_name"], i["location"]["lines"]["begin"]) for i in issues} == {("TL101", 5), ("TL102", 7)}
    assert {i["severity"] for i in issues} == {"major", "minor"}  # error, warning
    assert len({i["fingerprint"] for i in issues}) == len(issues)


def test_gitlab_fingerprints_survive_moved_lines_and_tell_duplicates_apart(repo, run_cli):
    before = {i["check_name"]: i["fingerprint"] for i in json.loads(_check(run_cli, repo, "pkg/bad.py", "--output-format", "gitlab")[1])}
    write(repo, "pkg/bad.py", "# a comment above moves every line\n" + BAD)
    after = {i["check_name"]: i["fingerprint"] for i in json.loads(_check(run_cli, repo, "pkg/bad.py", "--output-format", "gitlab")[1])}
    assert before == after
    twice = json.loads(gitlab.render([finding(), finding(row=9, end_row=9)], cwd=repo, root=repo))
    assert twice[0]["fingerprint"] != twice[1]["fingerprint"]


def test_gitlab_clean_run_is_an_empty_report(repo, run_cli):
    code, out = _check(run_cli, repo, "pkg/clean.py", "--output-format", "gitlab")
    assert code == 0 and json.loads(out) == []


def test_junit_has_the_testsuites_structure(repo, run_cli):
    _, out = _check(run_cli, repo, "pkg", "--output-format", "junit")
    assert out.startswith('<?xml version="1.0" encoding="UTF-8"?>')
    root = ET.fromstring(out)
    assert root.tag == "testsuites" and root.get("tests") == root.get("failures") == str(BAD_FINDINGS)
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["pkg/bad.py"]
    cases = suites[0].findall("testcase")
    assert len(cases) == int(suites[0].get("tests")) == int(suites[0].get("failures")) == BAD_FINDINGS
    for case in cases:
        assert re.fullmatch(r"org\.torchlint\.TL\d{3}", case.get("name"))
        assert case.get("classname") == "pkg/bad" and int(case.get("line")) >= 1 and int(case.get("column")) >= 1
        failure = case.find("failure")
        assert failure is not None and failure.get("message")
        assert failure.text == f"line {case.get('line')}, col {case.get('column')}, {failure.get('message')}"


def test_junit_clean_run_is_one_passing_case(repo, run_cli):
    root = ET.fromstring(_check(run_cli, repo, "pkg/clean.py", "--output-format", "junit")[1])
    cases = root.findall("testsuite/testcase")
    assert root.get("failures") == "0" and len(cases) == 1 and cases[0].find("failure") is None


def test_junit_escapes_markup_and_control_characters():
    text = junit.render([finding(message='a <b> & "c" \x1b[2K\x00')])
    failure = ET.fromstring(text).find("testsuite/testcase/failure")  # parses: nothing XML 1.0 forbids
    assert failure.get("message").startswith('a <b> & "c" ') and "\x1b" not in text and "\x00" not in text


def test_pylint_lines_are_path_line_code_message(repo, run_cli):
    _, out = _check(run_cli, repo, "pkg", "--output-format", "pylint")
    expected = {(f"pkg/{f['filename'].rsplit('/', 1)[1]}", f["location"]["row"], f["code"], f["message"])
                for f in _json_findings(run_cli, repo, "pkg")}
    parsed = set()
    for line in out.splitlines():
        m = re.fullmatch(r"(?P<path>[^:]+):(?P<line>\d+): \[(?P<code>TL\d{3})\] (?P<message>.+)", line)
        assert m, line
        parsed.add((m["path"], int(m["line"]), m["code"], m["message"]))
    assert parsed == expected and len(parsed) == BAD_FINDINGS


def test_json_lines_is_the_json_format_one_object_a_line(repo, run_cli):
    _, out = _check(run_cli, repo, "pkg", "--output-format", "json-lines")
    lines = out.splitlines()
    assert len(lines) == BAD_FINDINGS
    assert [json.loads(line) for line in lines] == _json_findings(run_cli, repo, "pkg")


def test_rdjson_matches_reviewdogs_format(repo, run_cli):
    _, out = _check(run_cli, repo, "pkg", "--output-format", "rdjson")
    report = json.loads(out)
    jsonschema.validate(report, RDJSON_SCHEMA)
    assert report["source"]["name"] == "torchlint"
    by_code = {d["code"]["value"]: d for d in report["diagnostics"]}
    assert set(by_code) == {"TL101", "TL102"}
    assert by_code["TL101"]["location"]["range"]["start"]["line"] == 5
    assert by_code["TL101"]["severity"] == "ERROR" and by_code["TL102"]["severity"] == "WARNING"
    assert by_code["TL101"]["code"]["url"].endswith("TL101-backward-under-no-grad.md")


class _Source:
    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()

    def line(self, row: int) -> str:
        return self.lines[row - 1]


def test_rdjson_columns_are_utf8_bytes_and_fixes_are_suggestions():
    # 'é' is two bytes: code-point column 8 (the `x`) is byte column 9.
    fix = Fix.from_json({"applicability": "safe", "message": "m", "edits": [
        {"content": "y", "location": {"row": 1, "column": 8}, "end_location": {"row": 1, "column": 9}}]})
    f = finding(path="a.py", row=1, col=8, end_row=1, end_col=9, fix=fix)
    report = json.loads(rdjson.render([f], {"a.py": _Source('s = "é"x\n')}))
    jsonschema.validate(report, RDJSON_SCHEMA)
    diagnostic = report["diagnostics"][0]
    assert diagnostic["location"]["range"] == {"start": {"line": 1, "column": 9}, "end": {"line": 1, "column": 10}}
    assert diagnostic["suggestions"] == [{"range": {"start": {"line": 1, "column": 9}, "end": {"line": 1, "column": 10}},
                                          "text": "y"}]


def test_grouped_lists_findings_under_their_file_aligned(repo, run_cli):
    write(repo, "pkg/other.py", "\n" * 9 + BAD)  # two-digit rows
    _, out = _check(run_cli, repo, "pkg", "--output-format", "grouped")
    blocks = out.split("\n\n")
    assert blocks[-1].startswith("Found 4 findings.")
    assert [b.splitlines()[0] for b in blocks[:-1]] == ["pkg/bad.py:", "pkg/other.py:"]
    for block in blocks[:-1]:
        rows = block.splitlines()[1:]
        assert all(re.fullmatch(r"  +\d+:\d+ +TL\d{3} .+", r) for r in rows), rows
        code_columns = {r.index(" TL") for r in rows}
        assert len(code_columns) == 1  # aligned within the file
    assert "  14:5 TL101" in out and "  16:5 TL102" in out  # row and column of pkg/other.py


def test_grouped_accepts_statistics_like_the_text_formats(repo, run_cli):
    code, out, _ = run_cli("check", "pkg", "--output-format", "grouped", "--statistics", cwd=repo)
    assert code == 1 and "TL101" in out


def test_azure_logging_commands(repo, run_cli):
    _, out = _check(run_cli, repo / "pkg", "bad.py", "--output-format", "azure")
    lines = out.splitlines()
    assert len(lines) == BAD_FINDINGS
    for line in lines:
        m = re.fullmatch(r"##vso\[task\.logissue type=(error|warning);sourcepath=pkg/bad\.py;linenumber=(\d+);"
                         r"columnnumber=(\d+);code=(TL\d{3});\](.+)", line)
        assert m, line


def test_azure_escapes_what_would_end_or_forge_a_command():
    f = finding(path="we;ird]dir/a.py", message="100% sure]\r\n##vso[task.complete result=Succeeded]")
    out = azure.render([f])
    assert out.count("\n") == 1 and "\r" not in out  # one command, no line break inside it
    assert "sourcepath=we%3Bird%5Ddir/a.py;" in out
    assert out.split("]", 1)[1].startswith("100%AZP25 sure]")
    # The agent takes the first `##vso[` of a line: the forged command is text of ours.
    assert out.startswith("##vso[task.logissue ") and out.index("##vso[task.complete") > out.index(";]")


def test_notebook_findings_name_their_cell_where_a_format_has_no_cell_field():
    f = finding(path="nb.ipynb", cell=3, row=2, end_row=2)
    assert "linenumber" not in azure.render([f]) and "cell 3, line 2: msg" in azure.render([f])
    assert FORMATS["pylint"]([f]) == "nb.ipynb:2: [TL101] cell 3, line 2: msg\n"
    assert json.loads(FORMATS["gitlab"]([f]))[0]["description"] == "cell 3, line 2: msg"
    assert "cell 3, line 2, col 5" in FORMATS["junit"]([f])
    assert "  cell 3:2:5 TL101 msg" in FORMATS["grouped"]([f])


@pytest.mark.skipif(sys.platform != "linux", reason="non-UTF-8 file names need a byte-oriented file system")
@pytest.mark.parametrize("fmt", NEW_FORMATS)
def test_file_names_cannot_forge_lines_or_break_the_report(tmp_path, fmt):
    """A file name with a newline and one that is not UTF-8, through the real CLI and -o."""
    (Path(os.fsdecode(bytes(tmp_path) + b"/caf\xe9.py"))).write_text(BAD)
    (tmp_path / "evil\nforged.py:1: [TL999] fake").write_text(BAD)
    proc = subprocess.run([sys.executable, "-m", "torchlint", "check", "--no-cache", "--output-format", fmt,
                           "-o", "report.out", "."], cwd=tmp_path, capture_output=True,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert proc.returncode == 1, proc.stderr.decode()
    report = (tmp_path / "report.out").read_text(encoding="utf-8")
    assert not any(line.startswith("forged.py") for line in report.splitlines())
    if fmt in ("gitlab", "rdjson"):
        json.loads(report)
    elif fmt == "json-lines":
        assert all(json.loads(line) for line in report.splitlines())
    elif fmt == "junit":
        ET.fromstring(report)


@pytest.mark.parametrize("fmt", [f for f in NEW_FORMATS if f != "grouped"])
def test_statistics_is_refused_where_a_parser_reads_the_report(fmt, repo, run_cli):
    code, out, err = run_cli("check", "pkg", "--statistics", "--output-format", fmt, cwd=repo)
    assert code == 2 and out == "" and f"--output-format {fmt}" in err
