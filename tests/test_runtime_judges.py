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

