"""A runtime check fires only where its hazard reaches the training: each correct program (the
clean twin, written from real training code) comes out clean, and the buggy twin still fires."""

from __future__ import annotations

import sys
import textwrap

import pytest

from test_runtime_run import findings_of, torchlint_run

pytest.importorskip("torch")

pytestmark = pytest.mark.torch

HEADER = """
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)
"""

# -- TL121: -inf masks ------------------------------------------------------------------------

POLICY = """
class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(6, 4)

    def forward(self, obs, valid):
        return self.body(obs).masked_fill(~valid, float("-inf"))  # invalid actions


class CausalMask(nn.Module):
    def forward(self, scores):
        n = scores.shape[-1]
        return scores + torch.full((n, n), float("-inf")).triu(1)


policy, mask = Policy(), CausalMask()
opt = torch.optim.Adam(policy.parameters(), lr=0.01)
for step in range(3):
    obs = torch.randn(8, 6)
    valid = torch.ones(8, 4, dtype=torch.bool)
    valid[:, 3] = False
    logits = policy(obs, valid)
    actions = torch.distributions.Categorical(logits=logits).sample()
    attention = F.softmax(mask(torch.randn(8, 5, 5)), dim=-1)
    {loss}
    opt.zero_grad()
    loss.backward()
    opt.step()
"""
POLICY_CLEAN = "loss = -(F.log_softmax(logits, dim=-1).gather(1, actions[:, None]).mean() + attention.mean())"
POLICY_BUGGY = "loss = -(F.log_softmax(logits, dim=-1) * F.one_hot(actions, 4)).sum(-1).mean() + logits.mean()"

# -- TL720: eval-mode forwards ----------------------------------------------------------------

NETS = """
def net():
    return nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Dropout(0.2), nn.ReLU(), nn.Linear(8, 3))


x, y = torch.randn(16, 4), torch.randint(0, 3, (16,))
"""

DISTILLATION = NETS + """
teacher, student = net().eval(), net()
opt = torch.optim.SGD({params}, lr=0.1)
for step in range(3):
    opt.zero_grad()
    loss = F.mse_loss(student(x), teacher(x))  # no no_grad: the backward also reaches the teacher
    loss.backward()
    opt.step()
"""

FGSM = NETS + """
model = net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    model.eval()
    x_adv = x.clone().requires_grad_()
    F.cross_entropy(model(x_adv), y).backward()  # the gradient wrt the input, in eval mode
    x_adv = (x + 0.1 * x_adv.grad.sign()).detach()
    model.train()
    opt.zero_grad()
    F.cross_entropy(model(x_adv), y).backward()
    opt.step()
"""

PERCEPTUAL = NETS + """
features = nn.Sequential(nn.Linear(3, 8), nn.BatchNorm1d(8)).eval()
for p in features.parameters():
    p.requires_grad_(False)  # a frozen perceptual network, BatchNorm statistics included
generator = nn.Linear(4, 3)
opt = torch.optim.SGD(generator.parameters(), lr=0.1)
for step in range(3):
    opt.zero_grad()
    F.mse_loss(features(generator(x)), features(torch.randn(16, 3))).backward()
    opt.step()
"""

GAN = NETS + """
G, D = net(), nn.Sequential(nn.Linear(3, 8), nn.Dropout(0.2), nn.Linear(8, 1))
d_opt = torch.optim.SGD(D.parameters(), lr=0.1)
for step in range(3):
    G.eval()
    fake = G(x)  # a sample taken in eval mode, grad mode on
    G.train()
    d_opt.zero_grad()
    real, made = D(torch.randn(16, 3)), D(fake.detach())
    d_loss = F.binary_cross_entropy_with_logits(real, torch.ones_like(real)) + \\
        F.binary_cross_entropy_with_logits(made, torch.zeros_like(made))
    d_loss.backward()
    d_opt.step()
"""

VALIDATION = NETS + """
model = net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    model.eval()
    val_loss = F.cross_entropy(model(x), y)  # validation without no_grad: never backpropagated
    model.train()
    opt.zero_grad()
    F.cross_entropy(model(x), y).backward()
    opt.step()
"""

LEFT_IN_EVAL = NETS + """
model = net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
model.eval()
for step in range(3):
    opt.zero_grad()
    F.cross_entropy(model(x), y).backward()
    opt.step()
"""

# -- TL320: an RNG used only in __init__ ------------------------------------------------------

DATASET = """
class Noisy(Dataset):
    def __init__(self):
        self.rng = np.random.default_rng(0)
        self.data = torch.from_numpy(self.rng.normal(size=(32, 4))).float()

    def __len__(self):
        return 32

    def __getitem__(self, i):
        {item}


if __name__ == "__main__":
    model = nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in DataLoader(Noisy(), batch_size=8, num_workers=2):
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
"""
DATASET_CLEAN = "return self.data[i]"
DATASET_BUGGY = "return self.data[i] + float(self.rng.normal())"

# -- TL222: fp32 norm layers in a bf16 model --------------------------------------------------

MIXED = """
class FP32LayerNorm(nn.LayerNorm):
    def forward(self, x):
        return super().forward(x.float()).to(x.dtype)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 8)
        self.norm = FP32LayerNorm(8)
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        h = self.norm(self.a(x))
        return self.head(h.to(self.head.weight.dtype)).float()


model = Net().to(torch.bfloat16)
model.norm.float()  # deliberately fp32
{extra}
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    opt.zero_grad()
    model(torch.randn(8, 4, dtype=torch.bfloat16)).sum().backward()
    opt.step()
"""

# -- TL601: what the load did ---------------------------------------------------------------

RESUME = """
class Settings:
    lr = 0.1


model = nn.Linear(2, 2)
torch.save({"model": model.state_dict(), "settings": {settings}}, "ckpt.pt")
try:
    state = torch.load("ckpt.pt")  # TL601
except Exception:  # the resume falls back to a full unpickle
    state = torch.load("ckpt.pt", weights_only=False)
model.load_state_dict(state["model"])
"""

# -- TL421 divergence and TL422 single-class cross-entropy -------------------------------------

REGRESSION = """
x = torch.randn(64, 8)
y = x @ torch.randn(8, 1)
model = nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr={lr})
for step in range(12):
    opt.zero_grad()
    loss = F.mse_loss(model(x), y)
    loss.backward()
    opt.step()
print(loss.item())
"""

BINARY = """
x, y = torch.randn(32, 4), torch.randint(0, 2, (32,))
model = nn.Linear(4, {outputs})
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    opt.zero_grad()
    F.cross_entropy(model(x), y if {outputs} == 2 else torch.zeros_like(y)).backward()
    opt.step()
"""

CASES = {
    "tl421-divergence": (REGRESSION.replace("{lr}", "0.05"), REGRESSION.replace("{lr}", "3.0"), "TL421"),
    "tl422-one-output": (BINARY.replace("{outputs}", "2"), BINARY.replace("{outputs}", "1"), "TL422"),
    "tl601-resume": (RESUME.replace("{settings}", '{"lr": 0.1}'), RESUME.replace("{settings}", "Settings()"),
                     "TL601"),
    "tl121-masks": (POLICY.replace("{loss}", POLICY_CLEAN), POLICY.replace("{loss}", POLICY_BUGGY), "TL121"),
    "tl720-distillation": (DISTILLATION.format(params="student.parameters()"),
                           DISTILLATION.format(params="[*student.parameters(), *teacher.parameters()]"), "TL720"),
    "tl720-fgsm": (FGSM, LEFT_IN_EVAL, "TL720"),
    "tl720-perceptual": (PERCEPTUAL, LEFT_IN_EVAL, "TL720"),
    "tl720-gan-sample": (GAN, GAN.replace("D(fake.detach())", "D(fake)").replace(
        "d_opt = torch.optim.SGD(D.parameters()", "d_opt = torch.optim.SGD([*D.parameters(), *G.parameters()]"),
        "TL720"),
    "tl720-validation": (VALIDATION, LEFT_IN_EVAL, "TL720"),
    "tl320-init-only-rng": (DATASET.replace("{item}", DATASET_CLEAN), DATASET.replace("{item}", DATASET_BUGGY),
                            "TL320"),
    "tl222-fp32-norm": (MIXED.replace("{extra}", ""), MIXED.replace("{extra}", "model.head.float()  # forgotten"),
                        "TL222"),
}


def confirmed(tmp_path, program: str) -> list[str]:
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(HEADER) + program, encoding="utf-8")
    result = torchlint_run("--output-format", "json", "--", sys.executable, str(script), cwd=tmp_path)
    assert result.returncode in (0, 1), result.stderr
    return sorted({f["code"] for f in findings_of(result) if f["runtime"]["verdict"] == "confirmed"})


def test_tl601_no_side_says_what_the_load_did(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(HEADER) + RESUME.replace("{settings}", '{"lr": 0.1}'), encoding="utf-8")
    result = torchlint_run("--output-format", "json", "--", sys.executable, str(script), cwd=tmp_path)
    [load] = [f for f in findings_of(result) if f["code"] == "TL601" and f["runtime"]["hits"]]
    assert load["runtime"]["verdict"] == "not-observed"
    assert load["runtime"]["evidence"] == ("ran 1 time(s), each with weights_only=True: the file held only tensors "
                                           "and plain containers")


@pytest.mark.parametrize("case", sorted(CASES))
def test_clean_twin_is_clean(tmp_path, case):
    clean, _, _ = CASES[case]
    assert confirmed(tmp_path, clean) == []


@pytest.mark.parametrize("case", sorted(CASES))
def test_buggy_twin_fires(tmp_path, case):
    _, buggy, code = CASES[case]
    found = confirmed(tmp_path, buggy)
    # A dataset RNG flagged statically is confirmed as TL301, not reported twice as TL320.
    assert code in found or (code == "TL320" and "TL301" in found), found


def test_divergence_names_the_growth(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(HEADER) + REGRESSION.replace("{lr}", "3.0"), encoding="utf-8")
    result = torchlint_run("--output-format", "json", "--", sys.executable, str(script), cwd=tmp_path)
    [diverged] = [f for f in findings_of(result) if f["code"] == "TL421"]
    assert "still finite but" in diverged["message"] and "times its first values" in diverged["message"]
    assert diverged["location"]["row"] == textwrap.dedent(HEADER).count("\n") + REGRESSION.splitlines().index(
        "    loss.backward()") + 1


# -- TL401: the softmax judge follows the tensor, not the line --------------------------------

SOFTMAX_LINE = """
model = nn.Linear(8, 5)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(6, 8), torch.randint(0, 5, (6,))
for step in range(3):
    probs = F.softmax(model(x), dim=-1)  # TL401
    opt.zero_grad()
    loss = F.cross_entropy(
        probs,
        y)
    loss.backward()
    opt.step()
"""


def test_tl401_follows_the_softmax_output_to_a_loss_on_other_lines(tmp_path):
    script = tmp_path / "train.py"
    program = textwrap.dedent(HEADER) + SOFTMAX_LINE
    script.write_text(program, encoding="utf-8")
    result = torchlint_run("--output-format", "json", "--", sys.executable, str(script), cwd=tmp_path)
    [finding] = [f for f in findings_of(result) if f["code"] == "TL401"]
    assert finding["location"]["row"] == next(i for i, line in enumerate(program.splitlines(), 1)
                                              if line.endswith("# TL401"))
    assert finding["runtime"]["verdict"] == "confirmed", finding["runtime"]
    assert "was a softmax output (its autograd node)" in finding["runtime"]["evidence"]


def test_the_producer_of_a_loss_input_is_found_through_views():
    import torch
    import torch.nn.functional as F

    from torchlint.runtime.monitor import _producer

    logits = torch.randn(2, 3, 4, requires_grad=True)
    assert _producer(F.softmax(logits, dim=-1).view(-1, 4).transpose(0, 1).grad_fn)[0] == "softmax"
    assert _producer(torch.sigmoid(logits)[0].reshape(-1).grad_fn)[0] == "sigmoid"
    assert _producer(F.log_softmax(logits, dim=-1).view(-1, 4).grad_fn) == (None, None)
    assert _producer((F.softmax(logits, dim=-1) * 2).grad_fn) == (None, None)  # a value change: not a view
