import torch
import torch as T
from torch import tensor as new_tensor

logits = torch.randn(4, 10)
probs = torch.softmax(logits, dim=-1)
target = probs.detach().clone()  # expect: TL210
copy = logits.detach().cpu().detach().clone()  # expect: TL210
again = torch.zeros(3).detach().clone()  # expect: TL210
typed = torch.tensor(logits, dtype=torch.float64)  # expect: TL210


def smooth(labels: torch.Tensor, eps: float):
    soft = labels.detach().clone()  # expect: TL210
    return soft * (1 - eps) + eps / soft.shape[-1]


def gathered(x):
    y = x.float()  # x is of unknown type, so y is too
    z = torch.cat([x, x])
    return z.detach().clone()  # expect: TL210


# --- near misses: must stay silent -------------------------------------------
ok_list = torch.tensor([1.0, 2.0])
ok_numpy = torch.tensor(np_array)
ok_item = torch.tensor(logits.max().item())
ok_tolist = torch.tensor(logits.tolist())
ok_as = torch.as_tensor(probs)
ok_clone = probs.detach().clone()
ok_tuple = torch.tensor(torch.max(logits, 1))  # a (values, indices) pair: not one tensor
ok_numel = torch.tensor(torch.numel(logits))  # an int


def ok_unknown(values, device):
    a = torch.tensor(values)
    b = torch.tensor(values.float())  # the receiver's type is unknown
    return a, b


def ok_rebound(x):
    x = torch.zeros(3)
    x = x.tolist()
    return torch.tensor(x)


def ok_param(x: list):
    return torch.tensor(x)


class NotTorch:
    def tensor(self, x):
        return x


ok_other = NotTorch().tensor(torch.zeros(3))


def ok_other_branch(sizes, world_size, n):
    if sizes is None:
        sizes = torch.full((world_size,), n)
    if not isinstance(sizes, torch.Tensor):
        sizes = torch.tensor(sizes)  # the tensor above is assigned in another branch
    return sizes


def ok_sibling_branch(scales, double):
    if double:
        scales = torch.tensor(scales, dtype=torch.double)
    else:
        scales = torch.tensor(scales, dtype=torch.float)  # `scales` here is still the input
    return scales
