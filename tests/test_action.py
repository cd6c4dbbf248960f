"""The GitHub Action (action.yml): its structure, and its steps run here as the runner runs
them (act is not available): the inputs substituted into each step's `env`, `run:` scripts
under bash with GITHUB_OUTPUT/GITHUB_ACTION_PATH/RUNNER_TEMP, `if:` conditions evaluated,
against a copy of examples/ in a git repository."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
ACTION = REPO / "action.yml"
WORKFLOW = REPO / ".github" / "workflows" / "torchlint.yml"
SARIF_SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-2.1.0.json").read_text(encoding="utf-8"))
EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def _action() -> dict[str, Any]:
    return yaml.safe_load(ACTION.read_text(encoding="utf-8"))


class Runner:
    """The part of the Actions runner a composite action needs: expressions over `inputs`
    and `steps.<id>.outputs`, `env`, `run`, `if`, GITHUB_OUTPUT, and `uses` recorded (not run)."""

    def __init__(self, inputs: dict[str, str], workspace: Path, temp: Path) -> None:
        action = _action()
        self.inputs = {name: spec.get("default", "") for name, spec in action["inputs"].items()}
        unknown = set(inputs) - set(self.inputs)
        assert not unknown, f"not inputs of action.yml: {unknown}"
        self.inputs.update(inputs)
        self.workspace, self.temp = workspace, temp
        self.outputs: dict[str, dict[str, str]] = {}
        self.used: list[dict[str, Any]] = []
        self.log: list[str] = []
        self.failed = False

    def value(self, expression: str) -> str:
        parts = expression.split(".")
        if parts[0] == "inputs" and len(parts) == 2:
            return self.inputs[parts[1]]
        if parts[0] == "steps" and len(parts) == 4 and parts[2] == "outputs":
            return self.outputs.get(parts[1], {}).get(parts[3], "")
        raise AssertionError(f"expression this runner does not know: {expression}")

    def substitute(self, text: str) -> str:
        return EXPR.sub(lambda m: self.value(m.group(1)), text)

    def condition(self, text: str) -> bool:
        """`a && b && ...` of `!cancelled()`, `x == 'lit'`, `x != 'lit'` (what action.yml uses)."""
        inner = EXPR.fullmatch(text.strip())
        expression = inner.group(1) if inner else text
        result = True
        for term in (t.strip() for t in expression.split("&&")):
            if term == "!cancelled()":
                continue
            m = re.fullmatch(r"([\w.-]+)\s*(==|!=)\s*'([^']*)'", term)
            assert m, f"condition this runner does not know: {term}"
            equal = self.value(m.group(1)) == m.group(3)
            result = result and (equal if m.group(2) == "==" else not equal)
        return result and not self.failed

    def run(self, steps: list[dict[str, Any]]) -> None:
        for step in steps:
            if "if" in step and not self.condition(step["if"]):
                continue
            if self.failed:
                break
            if "uses" in step:
                self.used.append({"uses": step["uses"], "with": {k: self.substitute(str(v))
                                                                for k, v in step.get("with", {}).items()}})
                continue
            output = self.temp / f"output-{len(self.log)}"
            output.write_text("")
            env = {**os.environ, "GITHUB_OUTPUT": str(output), "GITHUB_ACTION_PATH": str(REPO),
                   "RUNNER_TEMP": str(self.temp), "GITHUB_WORKSPACE": str(self.workspace),
                   **{k: self.substitute(str(v)) for k, v in step.get("env", {}).items()}}
            env.pop("VIRTUAL_ENV", None)
            assert step["shell"] == "bash"
            proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
                                  cwd=self.workspace, env=env, capture_output=True, text=True, timeout=600)
            self.log.append(proc.stdout + proc.stderr)
            self.failed = proc.returncode != 0
            if "id" in step:
                self.outputs[step["id"]] = dict(line.split("=", 1) for line in output.read_text().splitlines() if line)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The install step, once: a venv with torchlint from this checkout (the default `version`)."""
    temp = tmp_path_factory.mktemp("runner")
    runner = Runner({}, temp, temp)
    runner.run(_action()["runs"]["steps"][:1])
    assert not runner.failed, runner.log
    return runner.outputs["install"], temp


@pytest.fixture
def workspace(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    return tmp_path


def _run_after_install(installed, workspace, **inputs) -> Runner:
    install_outputs, temp = installed
    runner = Runner(inputs, workspace, temp)
    runner.outputs["install"] = install_outputs
    runner.run(_action()["runs"]["steps"][1:])
    return runner


def test_action_is_a_composite_action_matching_githubs_schema():
    action = _action()
    assert action["runs"]["using"] == "composite"
    assert {"version", "args", "src", "sarif"} <= set(action["inputs"])
    check_jsonschema = shutil.which("check-jsonschema")
    if check_jsonschema is None:
        pytest.skip("check-jsonschema is not installed")
    proc = subprocess.run([check_jsonschema, "--builtin-schema", "vendor.github-actions", str(ACTION)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_inputs_reach_scripts_only_through_the_environment():
    """`${{ inputs.x }}` inside a script is spliced into its text before bash runs: a value
    with `$(...)` would run. Every step passes inputs as environment variables instead."""
    for step in _action()["runs"]["steps"]:
        assert "${{" not in step.get("run", ""), step["name"]


def test_sarif_is_uploaded_with_upload_sarif_v4_and_the_permissions_are_documented():
    action = _action()
    upload = next(s for s in action["runs"]["steps"] if "upload-sarif" in s.get("uses", ""))
    assert upload["uses"] == "github/codeql-action/upload-sarif@v4"
    text = ACTION.read_text(encoding="utf-8")
    for permission in ("security-events: write", "actions: read", "contents: read"):
        assert permission in text


def test_sarif_run_on_the_examples_writes_a_valid_report_and_uploads_it(installed, workspace):
    runner = _run_after_install(installed, workspace, sarif="torchlint.sarif", args="--ignore TL501")
    assert runner.outputs["check"]["exit-code"] == "1", runner.log
    report = json.loads((workspace / "torchlint.sarif").read_text(encoding="utf-8"))
    jsonschema.validate(report, SARIF_SCHEMA)
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in report["runs"][0]["results"]}
    assert "examples/train_ddp.py" in uris  # relative to the repository root
    rules = {r["ruleId"] for r in report["runs"][0]["results"]}
    assert "TL101" in rules and "TL501" not in rules  # `args` reached torchlint
    assert runner.used == [{"uses": "github/codeql-action/upload-sarif@v4",
                            "with": {"sarif_file": "torchlint.sarif", "category": "torchlint"}}]
    assert runner.failed  # findings fail the job, after the upload
    assert "exit status 1" in runner.log[-1]


def test_without_sarif_findings_are_annotations_and_nothing_is_uploaded(installed, workspace):
    runner = _run_after_install(installed, workspace, src="examples/train_ddp.py")
    annotations = [line for line in runner.log[0].splitlines() if line.startswith("::")]
    assert annotations, runner.log
    assert all(re.match(r"::(error|warning|notice) file=examples/train_ddp\.py,line=\d+", a) for a in annotations)
    assert runner.used == []
    assert runner.outputs["check"] == {"exit-code": "1"}


def test_a_clean_run_passes(installed, workspace):
    runner = _run_after_install(installed, workspace, src="examples/train_clean.py")
    assert not runner.failed, runner.log
    assert runner.outputs["check"]["exit-code"] == "0"


def test_exit_zero_in_args_reports_without_failing(installed, workspace):
    runner = _run_after_install(installed, workspace, sarif="out.sarif", args="--exit-zero")
    assert not runner.failed, runner.log
    assert (workspace / "out.sarif").is_file() and len(runner.used) == 1


def test_shell_syntax_in_args_is_not_run(installed, workspace):
    runner = _run_after_install(installed, workspace, args="--select TL1 ; touch pwned $(touch pwned2)")
    assert not (workspace / "pwned").exists() and not (workspace / "pwned2").exists()
    assert runner.outputs["check"]["exit-code"] == "2"  # the words are taken as paths that do not exist
    assert runner.failed and runner.used == []


def test_the_repositorys_workflow_uses_the_action_with_the_permissions_it_needs(installed):
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    on = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` key as True
    assert "pull_request" in on and "push" in on
    job = workflow["jobs"]["torchlint"]
    permissions = {**workflow.get("permissions", {}), **job.get("permissions", {})}
    assert permissions == {"contents": "read", "security-events": "write", "actions": "read"}
    step = next(s for s in job["steps"] if s.get("uses") == "./")
    assert step["with"]["sarif"] == "torchlint.sarif"
    assert not any("upload-sarif@v3" in json.dumps(s) for s in job["steps"])
    # The workflow's inputs pass on this repository (its own code has no findings).
    install_outputs, temp = installed
    inputs = {**{k: str(v) for k, v in step["with"].items()}, "sarif": str(temp / "repository.sarif")}
    runner = Runner(inputs, REPO, temp)
    runner.outputs["install"] = install_outputs
    runner.run(_action()["runs"]["steps"][1:])
    assert runner.outputs["check"]["exit-code"] == "0", runner.log
    assert not runner.failed
