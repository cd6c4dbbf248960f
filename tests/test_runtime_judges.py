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


class _Monitor:
    """The slice of runtime.monitor.Monitor a check's monitor reads in these tests."""

    def __init__(self, **state):
        self.backward_since_step, self.last_grad_event, self.steps, self.notes = True, ("backward", None), 1, {}
        self.__dict__.update(state)

    def parameter_names(self):
        return {}


def test_only_gradients_that_are_zero_everywhere_are_reported_and_only_when_fresh():
    from torchlint.rules.autograd.gradient_always_zero import ZeroGradientMonitor

    zero, tiny, none = (torch.nn.Parameter(torch.ones(3)) for _ in range(3))
    zero.grad, tiny.grad = torch.zeros(3), torch.tensor([0.0, 1e-40, 0.0])  # a denormal is not zero
    hooked = torch.nn.Parameter(torch.ones(2))
    hooked.grad = torch.zeros(2)
    hooked.register_hook(lambda g: g * 0)  # a gradient hook may zero it on purpose: a freeze
    optimizer = torch.optim.SGD([zero, tiny, none, hooked], lr=0.1)
    event: dict = {}
    ZeroGradientMonitor().step(_Monitor(), optimizer, None, event)
    assert event == {"grads_checked": 2, "zero_grads": ["<tensor of shape (3,)>"]}
    stale: dict = {}  # a zero_grad between the backward and the step is TL104's
    ZeroGradientMonitor().step(_Monitor(last_grad_event=("zero_grad", None)), optimizer, None, stale)
    assert stale == {}


def _steps(*zero_sets):
    return [{"kind": "step", "site": ["t.py", 9], "pid": 1, "optimizer": "SGD", "grads_checked": 2,
             **({"zero_grads": list(z)} if z else {})} for z in zero_sets]


def test_a_zero_gradient_is_reported_only_when_it_held_at_every_checked_step():
    from pathlib import Path

    from torchlint.rules.autograd.gradient_always_zero import GradientAlwaysZero
    from torchlint.runtime.judging import Observation

    def found(events):
        return GradientAlwaysZero.problems(Observation(events), [], Path("."))

    assert [p.message.split(":")[-1] for p in found(_steps(["aux.weight"], ["aux.weight"]))] == [" `aux.weight`"]
    assert found(_steps(["aux.weight"], [])) == []  # masked for one step, then it learns
    assert found(_steps(["aux.weight"])) == []  # one step cannot tell
    single_class = {"kind": "loss", "site": ["t.py", 8], "pid": 1, "fn": "cross_entropy", "classes": 1}
    assert found([single_class, *_steps(["w"], ["w"])]) == []  # TL422 names that cause


def test_a_loss_broadcast_is_recorded_only_when_the_result_outgrows_both_sides():
    from torchlint.rules.losses.loss_shapes_broadcast import LossBroadcastMonitor

    def broadcast(inp, target, name="mse_loss"):
        event: dict = {}
        LossBroadcastMonitor().loss(None, name, torch.zeros(inp, requires_grad=True), torch.zeros(target), event, True)
        return event.get("broadcast")

    assert broadcast((8, 1), (8,)) == [8, 8]
    assert broadcast((8,), (8, 1)) == [8, 8]
    assert broadcast((8, 1), (8,), "kl_div") == [8, 8]
    assert broadcast((8, 3), (3,)) is None  # a target row for every sample
    assert broadcast((8, 3), ()) is None
    assert broadcast((8, 3), (8, 3)) is None
    assert broadcast((8, 3), (8,)) is None  # does not broadcast: the loss raises
    assert broadcast((8, 1), (8,), "cross_entropy") is None


def test_identical_worker_samples_are_reported_but_not_constant_or_different_ones():
    from pathlib import Path

    from torchlint.rules.data.duplicate_worker_samples import DuplicateWorkerSamples, WorkerSampleMonitor
    from torchlint.runtime.judging import Observation

    monitor = WorkerSampleMonitor()
    first = [monitor.fingerprint((torch.tensor([float(i)]), i)) for i in range(4)]
    assert first == [monitor.fingerprint((torch.tensor([float(i)]), i)) for i in range(4)]
    assert len(set(first)) == 4
    assert monitor.fingerprint(torch.zeros(2)) != monitor.fingerprint(torch.zeros(2, dtype=torch.int32))
    assert monitor.fingerprint({"x": torch.ones(1)}) != monitor.fingerprint({"y": torch.ones(1)})

    def found(*streams):
        events = [{"kind": "worker_samples", "pid": 2 + i, "site": ["t.py", 5], "loader": "1:1", "worker_id": i,
                   "num_workers": len(streams), "dataset": "Stream", "samples": s} for i, s in enumerate(streams)]
        return DuplicateWorkerSamples.problems(Observation(events), [], Path("."))

    assert len(found(first, first)) == 1
    assert found(first, first[::-1]) == []  # each worker its own order: not the same stream
    assert found(first[:1], first[:1]) == []  # one sample proves nothing
    assert found([first[0]] * 4, [first[0]] * 4) == []  # constant samples
