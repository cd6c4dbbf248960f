import torch
from torch import nn

model = nn.Linear(4, 2)

for p in model.parameters():
    p.data -= 0.01 * p.grad  # expect: TL102

for name, param in model.named_parameters():
    param.data = param.data.clamp(-1, 1)  # expect: TL102

with torch.no_grad():
    model.weight.normal_(0, 0.02)  # expect: TL102
with torch.no_grad():
    model.bias.zero_()  # expect: TL102
w = torch.randn(3, requires_grad=True)
with torch.no_grad():
    w.add_(1.0)  # expect: TL102
w.data[0] = 5.0  # expect: TL102
emb = nn.Parameter(torch.zeros(10, 4))
with torch.no_grad():
    emb.copy_(pretrained)  # expect: TL102
with torch.no_grad():
    layer.weight.uniform_(-0.1, 0.1)  # expect: TL102


def rescale(t: torch.Tensor) -> None:
    t.data = t.data * 2  # expect: TL102
    t.data *= 2  # expect: TL102


# --- near misses: must stay silent -------------------------------------------
something.data.fill_(0)  # unknown receiver: may be any object with a `data` field
for p in model.parameters():
    p.grad.data.mul_(0.5)  # gradient buffers are never saved for backward
    p.grad.data.zero_()
    p.data.unsqueeze_(0)  # changes the shape only, no value a backward could read
Sample = collections.namedtuple("Sample", "name data")
sample = Sample("a", torch.zeros(2))
sample.data.add_(1)  # a namedtuple field called data, not Tensor.data
batch.data.append(x)  # a list, not Tensor.data
result = p.data.clone()  # reading .data is not a write
copy = w.data  # reading


class Dataset:
    def __init__(self, data):
        self.data = data  # an ordinary attribute named data
        self.data.sort()  # not an in-place tensor method
        self.data.clamp_(0, 1)  # `self.data` is this object's attribute, not Tensor.data


def untyped(obj):
    obj.data = load()  # `obj` is not known to be a tensor


with torch.no_grad():
    for p in model.parameters():
        p.add_(1.0)  # the recommended form
nn.init.normal_(model.weight, 0, 0.02)


class Net(nn.Module):
    def _init_weights(self, module):
        # Initialisation runs before any graph exists (option skip-initializers, on by default).
        module.weight.data.normal_(mean=0.0, std=0.02)
        module.bias.data.zero_()

    def reset_parameters(self):
        for p in self.parameters():
            p.data.uniform_(-0.1, 0.1)


def convert_checkpoint(model, state):
    model.embed.weight.data = state["embed"]  # conversion code: no graph exists


def load_tf_weights(model, arrays):
    model.fc.weight.data.copy_(arrays[0])
