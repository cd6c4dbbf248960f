"""Runtime-only checks through the in-process API (`check_training_step`, `monitored`): each
check has a positive and a negative program. The monitors must not change any result.

Run by tests/test_runtime_checks.py in a child pytest: a first training step in a process loads
about 80 MB of torch machinery for good, and test_verify's memory watchdog counts the test
process's own memory."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

from torchlint.runtime import TrainingStepFailed, check_training_step  # noqa: E402
from torchlint.runtime.api import monitored  # noqa: E402
from torchlint.records import RuntimeResult  # noqa: E402

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


def step_failing(model, data=None, loss_fn=None):
    with pytest.raises(TrainingStepFailed) as info:
        step(model, data, loss_fn)
    return info.value.findings


def codes(findings) -> list[str]:
    return [f.code for f in findings]


def test_clean_step_has_no_findings():
    assert step(mlp()) == []


class TwoHeads(nn.Module):
    def __init__(self, use_aux: bool) -> None:
        super().__init__()
        self.use_aux = use_aux
        self.head = nn.Linear(8, 3)
        self.aux = nn.Linear(8, 3)

    def forward(self, x):
        return self.head(x) + (self.aux(x) if self.use_aux else 0)


def test_tl120_parameter_without_gradient():
    [finding] = step(TwoHeads(use_aux=False))
    assert finding.code == "TL120" and finding.path.endswith("runtime_api_cases.py")
    assert "2 of 4 parameters" in finding.message and "`aux.weight`, `aux.bias`" in finding.message
    assert finding.runtime == RuntimeResult("confirmed", finding.message, 1)


def test_tl120_forgotten_requires_grad():
    torch.manual_seed(0)
    weight = torch.randn(8, 3, requires_grad=True)
    bias = torch.zeros(3)  # requires_grad=True forgotten: the optimizer can never move it

    def forward(x):
        return x @ weight + bias

    [finding] = check_training_step(forward, batch(), nn.CrossEntropyLoss(), torch.optim.SGD([weight, bias], lr=0.1))
    assert finding.code == "TL120"
    assert "1 of the 2 tensors given to SGD are plain tensors with requires_grad=False" in finding.message
    assert "`<tensor of shape (3,)>`" in finding.message


def test_tl120_negative_every_parameter_used_or_frozen():
    assert step(TwoHeads(use_aux=True)) == []
    frozen = TwoHeads(use_aux=False)
    frozen.aux.requires_grad_(False)  # deliberately frozen: not a dead branch
    assert step(frozen) == []


class LogOutput(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.linear = nn.Linear(8, 3)

    def forward(self, x):
        return torch.log(self.linear(x))  # negative outputs -> NaN


def test_tl121_nan_first_seen_in_the_layer_that_made_it():
    [finding] = step(LogOutput())
    assert finding.code == "TL121"
    assert "output (16, 3) of LogOutput" in finding.message and "step 0" in finding.message
    model = mlp()
    with torch.no_grad():
        model[2].weight[0, 0] = float("inf")
    [finding] = step(model)
    assert "of `2` (Linear)" in finding.message and "parameters weight already held NaN/Inf" in finding.message


def test_tl121_negative_finite_model():
    class SafeLog(LogOutput):
        def forward(self, x):
            return F.log_softmax(self.linear(x), dim=-1)

    assert step(SafeLog()) == []


TL220_PROGRAM = """
import json
import torch
import torch.nn as nn
from torchlint.runtime import TrainingStepFailed, check_training_step

model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)).to("meta")  # the CPU machine's second device
try:
    check_training_step(model, (torch.randn(16, 8), torch.randint(0, 3, (16,))), nn.CrossEntropyLoss(),
                        torch.optim.SGD(model.parameters(), lr=0.1))
except TrainingStepFailed as failed:
    print(json.dumps([[f.code, f.message] for f in failed.findings]))
"""


def test_tl220_device_mismatch():
    # In a child process: meta tensors load torch's meta kernels, which would stay in this
    # process's memory for the rest of the suite (test_verify watches that memory).
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, "-c", TL220_PROGRAM], capture_output=True, text=True, check=True, cwd=root,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root),
                                                                                     os.environ.get("PYTHONPATH")]))})
    [[code, message]] = json.loads(out.stdout)
    assert code == "TL220" and "Sequential's parameters are on meta but its input is on cpu" in message


def test_tl220_negative_same_device():
    assert "TL220" not in codes(step(mlp()))


def test_tl221_label_out_of_range():
    x, y = batch()
    findings = step_failing(mlp(), (x, y + 1))  # classes numbered from 1
    assert codes(findings) == ["TL221"]
    message = findings[0].message
    assert "range over [1, 3]" in message and "3 classes" in message and "Target 3 is out of bounds" in message


def test_tl221_probability_targets_outside_unit_interval():
    torch.manual_seed(0)
    model = nn.Linear(8, 1)
    x = torch.randn(16, 8)
    [finding] = step(model, (x, torch.randn(16, 1) * 3), nn.BCEWithLogitsLoss())
    assert finding.code == "TL221" and "must be probabilities in [0, 1]" in finding.message


def test_tl221_negative_ignore_index_and_valid_probabilities():
    x, y = batch()
    y[::4] = -100  # padding equal to ignore_index is fine
    assert step(mlp(), (x, y)) == []
    torch.manual_seed(0)
    assert step(nn.Linear(8, 1), (x, torch.rand(16, 1)), nn.BCEWithLogitsLoss()) == []


def test_tl222_mixed_parameter_dtypes():
    model = mlp()
    model[2].double()
    findings = step_failing(model)  # the float32 x float64 matmul raises
    assert codes(findings) == ["TL222"]
    assert "2 torch.float32, 2 torch.float64" in findings[0].message and "2.weight" in findings[0].message


def test_tl222_negative_uniform_dtype():
    model = mlp().double()
    x, y = batch()
    assert step(model, (x.double(), y)) == []


def with_dropout():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.Dropout(0.5), nn.Linear(16, 3))


def test_tl720_backward_through_eval_mode():
    [finding] = step(with_dropout().eval())
    assert finding.code == "TL720" and "eval mode" in finding.message and "Dropout" in finding.message


def test_tl720_negative_train_mode_or_no_mode_dependent_layer():
    assert step(with_dropout().train()) == []
    assert step(mlp().eval()) == []  # eval() changes nothing without dropout/batch norm


def test_tl420_initial_loss_far_from_log_classes():
    model = mlp(classes=10)
    with torch.no_grad():
        model[2].weight.mul_(100)
    [finding] = step(model, batch(classes=10))
    assert finding.code == "TL420" and "log(10) = 2.303" in finding.message


def test_tl420_negative_default_initialization():
    assert step(mlp(classes=10), batch(classes=10)) == []


def test_check_training_step_validates_the_batch():
    with pytest.raises(TypeError, match="pair"):
        check_training_step(mlp(), torch.randn(4, 8), nn.CrossEntropyLoss(), None)


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
    code = ("import sys, torchlint.cli, torchlint.runtime, torchlint.output.sarif; "
            "from click.testing import CliRunner; "
            "CliRunner().invoke(torchlint.cli.main, ['check', '--no-cache', 'examples/run']); "
            "CliRunner().invoke(torchlint.cli.main, ['rule', 'TL120']); "
            "print('torch' in sys.modules)")
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root)
    assert out.stdout.strip() == "False"
