"""A rule that raises costs one internal-error report for that rule and file; the file's
other findings are kept (TorchFix loses the whole file)."""

from __future__ import annotations

import ast

from torchlint.checker import check_file
from torchlint.linter import FileTask, lint_bytes
from torchlint.rules.base import Rule, Violation
from torchlint import catalog

SOURCE = b"""import torch

state = torch.load("model.pt")
with torch.no_grad:
    pass
"""


class BrokenRule(Rule):
    code = "TL999"
    name = "broken-on-purpose"
    summary = "raises on every call"

    def visit_Call(self, node: ast.Call, ctx) -> None:
        raise ValueError("deliberately broken")


class BrokenAtEnd(Rule):
    code = "TL998"
    name = "broken-at-end"
    summary = "raises after the walk"

    def end_file(self, ctx) -> None:
        raise KeyError("late")


class BrokenSetup(Rule):
    code = "TL997"
    name = "broken-setup"
    summary = "raises before the walk"

    def setup(self, ctx) -> None:
        raise RuntimeError("early")


def test_a_raising_rule_keeps_the_other_rules_findings():
    rules = [BrokenRule, BrokenAtEnd, BrokenSetup, catalog.by_code()["TL601"], catalog.by_code()["TL108"]]
    result = check_file("x.py", SOURCE, rules)
    assert sorted(f.code for f in result.findings) == ["TL108", "TL601"]
    assert [e.code for e in result.rule_errors] == ["TL997", "TL998", "TL999"]
    broken = result.rule_errors[2]
    assert "ValueError: deliberately broken" in broken.error and "x.py" in broken.describe()


def test_the_linter_reports_the_rule_error_and_keeps_findings(monkeypatch):
    import torchlint.linter as linter

    monkeypatch.setattr(linter, "rule_classes_for", lambda codes: [BrokenRule, catalog.by_code()["TL601"]])
    result = lint_bytes(FileTask(path="x.py", display="x.py", codes=frozenset({"TL601", "TL999"})), SOURCE)
    assert [f.code for f in result.findings] == ["TL601"]
    assert result.internal_error is not None and "rule TL999" in result.internal_error


class Said(Violation):
    text: str

    def message(self) -> str:
        return self.text


def test_a_second_report_on_the_same_node_is_dropped():
    class Twice(Rule):
        code = "TL996"
        name = "twice"
        summary = "reports each call twice"

        def visit_Call(self, node: ast.Call, ctx) -> None:
            self.report(node, Said(text="first"))
            self.report(node, Said(text="second"))

    findings = check_file("x.py", b"import torch\ntorch.f()\n", [Twice]).findings
    assert [f.message for f in findings] == ["first"]


def test_editors_get_the_other_findings_and_one_line_for_the_broken_rule(tmp_path, monkeypatch):
    """The language server and the flake8 plugin go through `lint_document`."""
    from torchlint import api, linter

    monkeypatch.setattr(linter, "rule_classes_for",  # the same linting as `check`'s files
                        lambda codes: [BrokenRule, catalog.by_code()["TL601"], catalog.by_code()["TL108"]])
    (tmp_path / "torchlint.toml").write_text('extend-select = ["TL601"]\n')  # TL601 is off by default
    findings = api.lint_document(tmp_path / "x.py", SOURCE)
    codes = sorted(f.code for f in findings)
    assert codes == ["TL003", "TL108", "TL601"]  # TL003, not TL000: ignoring syntax errors must not hide it
    (error,) = [f for f in findings if f.code == "TL003"]
    assert (error.name, error.row, error.severity) == ("internal-error", 1, "error")
    assert "internal error in rule TL999" in error.message and "deliberately broken" in error.message


class BrokenNoqaJudge(Rule):
    code = "TL996"
    name = "broken-noqa-judge"
    summary = "raises in the pass after suppression"

    def check_noqa(self, ctx, suppression) -> None:
        raise RuntimeError("judged badly")


def test_a_rule_raising_after_the_suppression_pass_costs_only_itself():
    source = SOURCE.replace(b'"model.pt")', b'"model.pt")  # noqa: TL601')
    result = check_file("x.py", source, [BrokenNoqaJudge, catalog.by_code()["TL601"], catalog.by_code()["TL108"],
                                         catalog.by_code()["TL001"]])
    assert [f.code for f in result.findings] == ["TL108"]  # TL601 suppressed, its directive used: no TL001
    assert [(e.code, e.error.split(":")[0]) for e in result.rule_errors] == [("TL996", "RuntimeError")]
