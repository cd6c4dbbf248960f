"""The typed records a finding carries (its fix, its `torchlint run` result) and the two ways
a rule reports a violation: on an AST node or on a text range."""

from __future__ import annotations

import ast

import pytest

from torchlint.checker import check_file
from torchlint.records import Edit, Fix, RecordError, RuntimeResult
from torchlint.rules.base import Rule, Violation

FIX_JSON = {"applicability": "unsafe", "message": "Use `.long()`", "edits": [
    {"content": ".long()", "location": {"row": 3, "column": 5}, "end_location": {"row": 3, "column": 13}}]}


def test_fixes_read_back_from_ruff_shaped_json_and_refuse_unknown_shapes():
    fix = Fix.from_json(FIX_JSON)
    assert fix == Fix("Use `.long()`", (Edit((3, 5), (3, 13), ".long()"),), "unsafe") and not fix.safe
    assert fix.to_json() == FIX_JSON and list(fix.to_json()) == ["applicability", "message", "edits"]
    edit = FIX_JSON["edits"][0]
    for broken in ({"edits": [{"text": "?"}]}, {**FIX_JSON, "applicability": "maybe"}, {**FIX_JSON, "edits": "x"},
                   {**FIX_JSON, "edits": [{**edit, "location": {"row": 0, "column": 1}}]},
                   {**FIX_JSON, "edits": [{**edit, "location": {"row": 4, "column": 1}}]},  # ends before it starts
                   {**FIX_JSON, "edits": [{**edit, "content": None}]}, None):
        with pytest.raises(RecordError):
            Fix.from_json(broken)


def test_runtime_results_round_trip_and_refuse_unknown_verdicts():
    result = RuntimeResult("not-observed", "ran 3 time(s)", 3)
    assert result.to_json() == {"verdict": "not-observed", "evidence": "ran 3 time(s)", "hits": 3}
    assert RuntimeResult.from_json(result.to_json()) == result and not result.confirmed
    assert result.noted(" (cut short)").evidence == "ran 3 time(s) (cut short)" and result.evidence == "ran 3 time(s)"
    with pytest.raises(RecordError):
        RuntimeResult.from_json({"verdict": "maybe", "evidence": "", "hits": 0})
    with pytest.raises(RecordError):
        RuntimeResult.from_json({"verdict": "confirmed", "evidence": "", "hits": "1"})


class AnX(Violation):
    help = "Drop the x"

    def message(self) -> str:
        return "an x"


class NamedCall(Violation):
    func: str

    def message(self) -> str:
        return f"a call of `{self.func}`"

    def help_text(self) -> str:
        return f"Do not call `{self.func}`"


class Silent(Violation):  # no help: the finding has none
    def message(self) -> str:
        return "a name"


class RangeRule(Rule):
    code = "TL995"
    name = "range-on-purpose"
    summary = "reports the text `x` on every line that has one"

    def end_file(self, ctx) -> None:
        for row, line in enumerate(ctx.source.lines, 1):
            if "x" in line:
                col = line.index("x") + 1
                self.report_range((row, col), (row, col + 1), AnX(), fix=Fix("drop it", (Edit((row, col), (row, col + 1), ""),)))

    def visit_Call(self, node: ast.Call, ctx) -> None:
        self.report(node, NamedCall(func=ast.unparse(node.func)), params={"args": len(node.args)})

    def visit_Starred(self, node: ast.Starred, ctx) -> None:
        self.report(node, Silent())


def test_a_rule_reports_on_a_text_range_and_noqa_applies_to_it():
    source = b"import torch\ny = 1  # x\ntorch.f(x)  # noqa: TL995\n"
    findings = check_file("a.py", source, [RangeRule]).findings
    assert [(f.row, f.col, f.end_col, f.message, f.help) for f in findings] == [(2, 10, 11, "an x", "Drop the x")]
    assert findings[0].fix == Fix("drop it", (Edit((2, 10), (2, 11), ""),))


def test_a_finding_records_the_violations_message_and_help():
    findings = check_file("a.py", b"import torch\ntorch.f(*a, b)\n", [RangeRule]).findings
    assert [(f.col, f.message, f.help, f.probe_params) for f in findings] == [
        (1, "a call of `torch.f`", "Do not call `torch.f`", {"args": 2}), (9, "a name", None, {})]


def test_a_violation_is_a_frozen_keyword_record_that_must_say_its_message():
    call = NamedCall(func="f")
    assert call == NamedCall(func="f") != NamedCall(func="g") and hash(call) == hash(NamedCall(func="f"))
    assert repr(call) == "NamedCall(func='f')" and call != AnX()
    with pytest.raises(AttributeError, match="frozen"):
        call.func = "g"  # type: ignore[misc]
    with pytest.raises(TypeError, match=r"unknown fields \['fn'\], missing fields \['func'\]"):
        NamedCall(fn="f")  # type: ignore[call-arg]

    class Unsaid(Violation):
        level: int = 1  # a default: the class attribute

    assert Unsaid().level == 1 and Unsaid(level=2).level == 2 and Unsaid().help_text() is None
    with pytest.raises(NotImplementedError, match="Unsaid must define message"):
        Unsaid().message()
