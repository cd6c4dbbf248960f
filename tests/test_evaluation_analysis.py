"""analysis/evaluation.py: which functions read as evaluation, which calls the file makes
under a grad-disabled block, what it puts in eval mode, which model classes hold
BatchNorm/Dropout (TL705, TL706)."""

from __future__ import annotations

import ast
import textwrap

import pytest

from torchlint.analysis.evaluation import built_in_scope, evaluation_facts, is_eval_name
from torchlint.checker import FileContext
from torchlint.source import SourceFile


@pytest.mark.parametrize("name", ["validate", "evaluate", "val_epoch", "run_eval", "test", "test_epoch",
                                  "validation_step", "evaluate_model", "eval_one_epoch"])
def test_evaluation_names(name):
    assert is_eval_name(name)


@pytest.mark.parametrize("name", ["train", "train_and_evaluate", "forward", "retrieve", "latest", "interval",
                                  "medieval", "protest"])
def test_other_names(name):
    assert not is_eval_name(name)


def _ctx(src: str) -> FileContext:
    src = textwrap.dedent(src)
    return FileContext(SourceFile("x.py", src), ast.parse(src))


def test_facts_see_grad_disabled_calls_eval_receivers_and_modes():
    ctx = _ctx("""
        import torch
        def validate(m): pass
        def run(model):
            model.eval()
            with torch.no_grad():
                validate(model)
            validate(model)
        def recal(model):
            model.train()
    """)
    facts = evaluation_facts(ctx)
    assert sorted((s.call.lineno, s.grad_off) for s in facts.calls["validate"]) == [(7, True), (8, False)]
    assert facts.eval_receivers == {"model"}
    run, recal = ctx.tree.body[2], ctx.tree.body[3]
    assert id(run) in facts.scopes_calling_eval and id(recal) in facts.scopes_calling_train
    assert id(recal) not in facts.scopes_calling_eval


def test_model_classes_with_mode_layers():
    ctx = _ctx("""
        import torch.nn as nn
        import torchvision
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.bn = nn.BatchNorm2d(4)
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.block = Block()
        class Flat(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(2, 2)
        class FrozenBN(nn.Module):
            def __init__(self):
                super().__init__()
                self.bn = nn.BatchNorm2d(4)
            def train(self, mode=True):
                super().train(mode)
                self.bn.eval()
        class BatchStats(nn.Module):
            def __init__(self):
                super().__init__()
                self.bn = nn.BatchNorm1d(4, track_running_stats=False)
        a = Net()
        a = a.cuda()
        e = FrozenBN()
        f = BatchStats()
        b = Flat()
        c = torchvision.models.resnet18()
        d = Net() if x else Flat()
    """)
    assert built_in_scope("a", ctx.tree, ctx) == "Net"
    assert built_in_scope("b", ctx.tree, ctx) is None
    assert built_in_scope("c", ctx.tree, ctx) == "resnet18"
    assert built_in_scope("d", ctx.tree, ctx) is None
    assert built_in_scope("e", ctx.tree, ctx) is None  # manages its own mode
    assert built_in_scope("f", ctx.tree, ctx) is None  # batch statistics in both modes


SMOKE = """\
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(4)


def evaluate_stats(val_loader):
    model = Net()
    sizes = []
    for x in val_loader:
        sizes.append(model(x).shape)
"""


@pytest.mark.parametrize("name, found", [("test_model.py", set()), ("model_test.py", set()),
                                         ("check_model.py", {"TL705", "TL706"})])
def test_test_files_are_smoke_tests_for_tl705_and_tl706(tmp_path, name, found):
    """A fixture cannot be named like a test file (pytest would collect it), so this is here."""
    from conftest import lint_file

    path = tmp_path / name
    path.write_text(SMOKE)
    assert {f.code for f in lint_file(path, {"TL705", "TL706"})} == found
