"""The cheap gates of the cold lint (issue 23) decide exactly what the slow paths decided: the
one-scan prefilter wakes the rules `applies_to` wakes, a call turned away by its attribute
could not have resolved to a wanted name, and a file is tokenized for its `# noqa` comments
only when a directive could matter. Timings live in benchmarks/speed.py."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from torchlint import noqa
from torchlint.analysis import imports
from torchlint.analysis.imports import QualNames
from torchlint.analysis.semantic import SemanticModel
from torchlint.checker import awake, check_source
from torchlint.rules import lazy

FIXTURES = Path(__file__).parent / "fixtures"


def test_awake_wakes_what_applies_to_wakes_for_every_rule_and_fixture():
    rules = list(lazy.by_code().values())
    texts = [p.read_text(encoding="utf-8") for p in sorted(FIXTURES.rglob("*.py"))]
    texts += ["", "import torch\n", "x = torch.utils.data.DataLoader(ds)\n"]
    for text in texts:
        assert awake(rules, text) == [r for r in rules if r.applies_to(text)]


def test_awake_asks_a_class_without_requires_text():
    class Custom:
        code = "TL999"

        @staticmethod
        def applies_to(text: str) -> bool:
            return text.startswith("#")

    assert awake([Custom], "# x") == [Custom] and awake([Custom], "x") == []


def test_canonical_keeps_the_last_component_that_the_gate_reads():
    for name in [*imports._CANONICAL, *(p + "loss.X" for p in imports._MODULE_PREFIXES),
                 *(p + "a.b.Y" for p in imports._MODULE_PREFIXES)]:
        assert imports.canonical(name).rpartition(".")[2] == name.rpartition(".")[2], name


@pytest.mark.parametrize("src", [
    "import torch\ntorch.save(m, p)\n",
    "import torch as T\nT.save(m, p)\n",
    "from torch import save as keep\nkeep(m, p)\n",
    "from torch.nn.modules import loss\nloss.CrossEntropyLoss()\n",
    "import torch\nx.save(m, p)\n",
    "import torch\ntorch.load(p)\n",
    "def f(torch):\n    torch.save(m, p)\n",
])
def test_call_among_answers_as_call_name_does(src):
    tree = ast.parse(src)
    model = SemanticModel(tree)
    names = QualNames({"torch.save", "torch.nn.CrossEntropyLoss"})
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    for call in calls:
        name = model.call_name(call)
        assert model.call_among(call, names) == (name if name in names else None)
    assert calls


def test_may_suppress_is_false_only_when_no_directive_could_apply():
    text = 'import torch\ns = "# noqa"\nx = 1  # noqa: TL101\n'
    lines = text.split("\n")
    assert not noqa.may_suppress("import torch\n", ["import torch", ""], [1])
    assert not noqa.may_suppress(text, lines, [1])
    assert noqa.may_suppress(text, lines, [3])
    assert noqa.may_suppress(text, lines, [2])  # the line says noqa: only the tokenizer can tell it is a string
    assert noqa.may_suppress("# torchlint: noqa\nimport torch\n", ["# torchlint: noqa", "import torch", ""], [2])


BACKWARD = "import torch\nwith torch.no_grad():\n    loss = m(x)\n    loss.backward(){comment}\n"


def _tl101(src: str) -> list[str]:
    rules = [lazy.by_code()["TL101"]]
    return [f.code for f in check_source("a.py", src.encode(), rules)]


def test_a_noqa_that_cannot_apply_is_never_tokenized(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("tokenized")

    monkeypatch.setattr(noqa, "scan", refuse)
    assert _tl101('"""Say # noqa in the docstring."""\n' + BACKWARD.format(comment="")) == ["TL101"]
    with pytest.raises(AssertionError, match="tokenized"):
        _tl101(BACKWARD.format(comment="  # noqa: TL101"))


def test_directives_still_suppress_through_the_gate():
    assert _tl101(BACKWARD.format(comment="")) == ["TL101"]
    assert _tl101(BACKWARD.format(comment="  # noqa: TL101")) == []
    assert _tl101("# torchlint: noqa\n" + BACKWARD.format(comment="")) == []
    assert _tl101(BACKWARD.format(comment='; s = "# noqa"')) == ["TL101"]  # text, not a comment
