"""Unit tests of the monitors beside the rules, on real tensors (their programs, a clean and a
buggy twin per check, are the fixtures under tests/fixtures/<CODE>/run/ and api/)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch


def test_the_producer_of_a_loss_input_is_found_through_views():
    import torch.nn.functional as F

    from torchlint.rules.losses.softmax_before_cross_entropy import SoftmaxInputMonitor

    producer = SoftmaxInputMonitor.producer
    logits = torch.randn(2, 3, 4, requires_grad=True)
    assert producer(F.softmax(logits, dim=-1).view(-1, 4).transpose(0, 1).grad_fn)[0] == "softmax"
    assert producer(torch.sigmoid(logits)[0].reshape(-1).grad_fn)[0] == "sigmoid"
    assert producer(F.log_softmax(logits, dim=-1).view(-1, 4).grad_fn) == (None, None)
    assert producer((F.softmax(logits, dim=-1) * 2).grad_fn) == (None, None)  # a value change: not a view


def test_an_accumulator_is_found_to_reach_an_earlier_loss_breadth_first():
    from torchlint.rules.autograd.loss_accumulated_with_graph import GraphKeptMonitor

    weight = torch.randn(3, requires_grad=True)
    earlier = (weight * 2).sum()
    total = earlier + 0
    for _ in range(3):  # later terms come first in the graph; a depth-first walk would enter them
        total = total + (weight.exp() * weight.sin()).sum()
    monitor = GraphKeptMonitor()
    assert monitor.reaches(total.grad_fn, {id(earlier.grad_fn): 4}) == 4
    assert monitor.reaches(total.grad_fn, {id(weight): 4}) is None  # a tensor is no graph node
    assert monitor.reaches((weight * 3).sum().grad_fn, {id(earlier.grad_fn): 4}) is None
