"""Property tests, on a bounded budget (a few seconds each, derandomized for stable CI):
generated programs and mutated fixtures never cause an internal error; the text prefilter
(`requires_text`) never hides a finding; the recursive and iterative walkers agree."""

from __future__ import annotations

import hypothesmith
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import FIXTURES
from torchlint.checker import check_file
from torchlint import catalog

pytestmark = pytest.mark.filterwarnings("ignore::SyntaxWarning")  # generated code may say `1()`

RULES = [r for r in catalog.static_rules() if r.code != "TL000"]
FIXTURE_TEXTS = [p.read_text(encoding="utf-8") for p in sorted(FIXTURES.glob("TL*/*.py"))]
# Words that make the rules look closer: names they resolve, methods they match.
WORDS = ["torch", "nn", "F", "self", "loader", "model", "loss", "optimizer", "backward", "zero_grad",
         "step", "data", "grad", "eval", "train", "no_grad", "DataLoader", "DistributedSampler", "x", "0", "-100"]
BUDGET = settings(max_examples=300, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck))


def signature(findings):
    return [(f.code, f.row, f.col, f.end_row, f.end_col, f.message, f.help) for f in findings]


def assert_sound(source: str) -> None:
    data = source.encode("utf-8", "surrogatepass")
    normal = check_file("gen.py", data, RULES)
    assert not normal.rule_errors, [e.describe() for e in normal.rule_errors]
    unfiltered = check_file("gen.py", data, RULES, prefilter=False)
    assert not unfiltered.rule_errors, [e.describe() for e in unfiltered.rule_errors]
    assert signature(normal.findings) == signature(unfiltered.findings), "requires_text hid a finding"
    deep = check_file("gen.py", data, RULES, deep=True)
    assert signature(deep.findings) == signature(normal.findings), "the walkers disagree"


@st.composite
def mutated_fixture(draw):
    lines = draw(st.sampled_from(FIXTURE_TEXTS)).splitlines()
    for _ in range(draw(st.integers(1, 4))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        kind = draw(st.sampled_from(["delete", "duplicate", "swap", "word", "dedent", "indent"]))
        if kind == "delete":
            del lines[i]
        elif kind == "duplicate":
            lines.insert(i, lines[i])
        elif kind == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == "word":
            words = [w for w in WORDS if w in lines[i]]
            if words:
                lines[i] = lines[i].replace(draw(st.sampled_from(words)), draw(st.sampled_from(WORDS)), 1)
        elif kind == "dedent":
            lines[i] = lines[i].lstrip()
        else:
            lines[i] = "    " + lines[i]
    return "\n".join(lines) + "\n"


@BUDGET
@given(mutated_fixture())
def test_mutated_fixtures(source):
    assert_sound(source)


@settings(BUDGET, max_examples=100)
@given(hypothesmith.from_grammar())
def test_generated_programs(source):
    assert_sound("import torch\n" + source)


def test_every_fixture_unmutated():
    for text in FIXTURE_TEXTS:
        assert_sound(text)
