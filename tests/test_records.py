"""The typed records a finding carries (its fix, its `torchlint run` result) and the two ways
a rule reports: on an AST node or on a text range."""

from __future__ import annotations

import ast

import pytest

from torchlint.checker import check_file
from torchlint.records import Edit, Fix, RecordError, RuntimeResult
from torchlint.rules.base import Rule

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


class RangeRule(Rule):
    code = "TL995"
    name = "range-on-purpose"
    summary = "reports the text `x` on every line that has one"

    def end_file(self, ctx) -> None:
        for row, line in enumerate(ctx.source.lines, 1):
            if "x" in line:
                col = line.index("x") + 1
                self.report_range((row, col), (row, col + 1), "an x", fix=Fix("drop it", (Edit((row, col), (row, col + 1), ""),)))

    def visit_Call(self, node: ast.Call, ctx) -> None:
        self.report(node, "a call")


def test_a_rule_reports_on_a_text_range_and_noqa_applies_to_it():
    source = b"import torch\ny = 1  # x\ntorch.f(x)  # noqa: TL995\n"
    findings = check_file("a.py", source, [RangeRule]).findings
    assert [(f.row, f.col, f.end_col, f.message) for f in findings] == [(2, 10, 11, "an x")]
    assert findings[0].fix == Fix("drop it", (Edit((2, 10), (2, 11), ""),))
