import torch
from torch import nn

model = nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
crit = nn.MSELoss()

for x, y in loader:
    out = model(x)
    loss = crit(out, y)
    for p in model.parameters():
        with torch.no_grad():
            p.clamp_(-1, 1)  # expect: TL102
    model.weight.data[0] = 0.0  # expect: TL102
    loss.backward()
    opt.step()
    opt.zero_grad()


def train_step(net, batch, target):
    pred = net(batch)
    w = torch.randn(3, requires_grad=True)
    with torch.no_grad():
        w.add_(1.0)  # expect: TL102
    loss = ((pred - target) ** 2).mean()
    emb = nn.Parameter(torch.zeros(10, 4))
    emb.data = torch.ones(10, 4)  # expect: TL102
    loss.backward()


class Clamped(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        with torch.no_grad():
            self.fc.weight.clamp_(-1, 1)  # expect: TL102
        return self.fc(x)


# --- near misses: must stay silent -------------------------------------------
for x, y in loader:
    loss = crit(model(x), y)
    loss.backward()
    opt.step()
    for p in model.parameters():
        p.data.clamp_(-1, 1)  # after the backward: the graph is already freed
        p.grad.data.zero_()  # gradient buffers are never saved for backward
    opt.zero_grad()

for p in model.parameters():
    p.data -= 0.01 * p.grad  # no forward/backward in this loop: nothing is saved
something.data.fill_(0)  # unknown receiver: may be any object with a `data` field
Sample = collections.namedtuple("Sample", "name data")
sample = Sample("a", torch.zeros(2))
sample.data.add_(1)  # a namedtuple field called data, not Tensor.data


def rescale(t: torch.Tensor) -> None:
    t.data = t.data * 2  # no graph is built in this function
    t.data *= 2


class Dataset:
    def __init__(self, data):
        self.data = data  # an ordinary attribute named data
        self.data.clamp_(0, 1)  # `self.data` is this object's attribute, not Tensor.data


def untyped(obj):
    loss = obj.compute()
    obj.data = load()  # `obj` is not known to be a tensor
    loss.backward()


class Net(nn.Module):
    def _init_weights(self, module):
        module.weight.data.normal_(mean=0.0, std=0.02)  # initialisation: no graph exists yet


def load_tf_weights(model, arrays):
    model.fc.weight.data.copy_(arrays[0])
