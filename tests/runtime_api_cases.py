"""The in-process API (`check_training_step`, `monitored`): a clean step, the batch check,
bit-identical results, a clean uninstall. Each runtime check's own programs (a firing one and a
clean twin) are its fixtures, `tests/fixtures/<CODE>/api/` (tests/test_runtime_fixtures.py).

Run by tests/test_runtime_checks.py in a child pytest: a first training step in a process loads
about 80 MB of torch machinery for good, and test_verify's memory watchdog counts the test
process's own memory."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

from torchlint.runtime import TrainingStepFailed, check_training_step  # noqa: E402
from torchlint.runtime.api import monitored  # noqa: E402

pytestmark = pytest.mark.torch


def mlp(classes: int = 3) -> "nn.Module":
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, classes))


def batch(classes: int = 3):
    generator = torch.Generator().manual_seed(1)
    return torch.randn(16, 8, generator=generator), torch.randint(0, classes, (16,), generator=generator)


def step(model, data=None, loss_fn=None):
    data = data if data is not None else batch()
    return check_training_step(model, data, loss_fn or nn.CrossEntropyLoss(),
                               torch.optim.SGD(model.parameters(), lr=0.1))


def test_clean_step_has_no_findings():
    assert step(mlp()) == []


def test_a_failing_step_raises_with_what_the_monitors_saw():
    def broken(x):
        raise ValueError("no forward today")

    with pytest.raises(TrainingStepFailed, match="raised ValueError: no forward today") as info:
        check_training_step(broken, batch(), nn.CrossEntropyLoss(), torch.optim.SGD(mlp().parameters(), lr=0.1))
    assert isinstance(info.value.error, ValueError) and info.value.findings == []


def test_check_training_step_validates_the_batch():
    with pytest.raises(TypeError, match="pair"):
        check_training_step(mlp(), torch.randn(4, 8), nn.CrossEntropyLoss(), None)


def with_dropout():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.Dropout(0.5), nn.Linear(16, 3))


def run_steps(model, data, steps: int = 4):
    torch.manual_seed(123)  # dropout draws from the global generator
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = data
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.detach().clone())
    return losses, [p.detach().clone() for p in model.parameters()]


def test_monitors_do_not_change_results_bit_for_bit():
    model = with_dropout()
    plain_model = copy.deepcopy(model)
    data = batch()
    plain_losses, plain_params = run_steps(plain_model, data)
    with monitored() as session:
        losses, params = run_steps(model, data)
    assert session.sink.events, "the monitors saw nothing"
    assert all(torch.equal(a, b) for a, b in zip(plain_losses, losses))
    assert all(torch.equal(a, b) for a, b in zip(plain_params, params))


def test_monitors_uninstall_cleanly():
    before = (torch.Tensor.backward, F.cross_entropy, torch.nn.modules.module._global_forward_hooks.copy())
    with monitored():
        assert F.cross_entropy is not before[1]
    assert (torch.Tensor.backward, F.cross_entropy) == before[:2]
    assert torch.nn.modules.module._global_forward_hooks == before[2]
    assert "data" not in vars(torch.Tensor)


def test_linting_never_imports_torch():
    from torchlint import catalog

    check = catalog.runtime_checks()[-1].code  # `torchlint rule` on a runtime check, with its monitor and judge
    code = ("import sys, torchlint.cli, torchlint.runtime, torchlint.output.sarif; "
            "from click.testing import CliRunner; "
            "CliRunner().invoke(torchlint.cli.main, ['check', '--no-cache', 'examples/run']); "
            f"CliRunner().invoke(torchlint.cli.main, ['rule', '{check}']); "
            "print('torch' in sys.modules)")
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root)
    assert out.stdout.strip() == "False"


class _Notes:
    """What support.gradient_norms reads of a Monitor: its notes, step count and error sink."""

    def __init__(self) -> None:
        self.notes: dict = {}
        self.steps = 0
        self.errors: list = []

    def internal_error(self, where, exc) -> None:
        self.errors.append(where)


def test_gradient_norms_are_read_once_per_step_and_match_torch():
    from torchlint.runtime.support import gradient_norms

    model = mlp()
    optimizer = torch.optim.SGD([{"params": model[0].parameters()}, {"params": model[2].parameters()}], lr=0.1)
    x, y = batch()
    F.cross_entropy(model(x), y).backward()
    m = _Notes()
    groups = gradient_norms(m, optimizer)
    assert [[p for p, _ in g] for g in groups] == [list(model[0].parameters()), list(model[2].parameters())]
    for group in groups:
        for p, norm in group:
            assert norm == pytest.approx(float(torch.linalg.vector_norm(p.grad)), rel=1e-6)
    assert gradient_norms(m, optimizer) is groups  # the same step: shared, not read again
    m.steps += 1
    assert gradient_norms(m, optimizer) is not groups and m.errors == []


def test_sparse_gradients_have_no_shared_norms_and_no_error():
    from torchlint.runtime.support import gradient_norms

    bag = nn.EmbeddingBag(10, 4, sparse=True)
    optimizer = torch.optim.SGD(bag.parameters(), lr=0.1)
    bag(torch.randint(0, 10, (3, 2))).sum().backward()
    m = _Notes()
    assert gradient_norms(m, optimizer) is None and m.errors == []


def test_gradients_that_cannot_be_normed_are_reported_once(monkeypatch):
    from torchlint.runtime.support import gradient_norms

    model = mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = batch()
    F.cross_entropy(model(x), y).backward()

    def refuse(tensors):
        raise RuntimeError("no norms here")

    monkeypatch.setattr(torch, "_foreach_norm", refuse)
    m = _Notes()
    assert gradient_norms(m, optimizer) is None
    m.steps += 1
    assert gradient_norms(m, optimizer) is None and m.errors == ["gradient norms"]
