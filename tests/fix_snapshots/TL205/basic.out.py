import torch

a = torch.Tensor(3)  # expect: TL205
b = torch.tensor([1, 2, 3], dtype=torch.float32)  # expect: TL205
c = torch.LongTensor(5)  # expect: TL205
d = torch.cuda.FloatTensor(2, 2)  # expect: TL205

# --- near misses: must stay silent -------------------------------------------
ok = isinstance(a, torch.Tensor)


def f(x: torch.Tensor) -> torch.Tensor:
    return x


e = torch.tensor([3])
x = x.type(torch.FloatTensor)


def shaped():
    noise = torch.FloatTensor(1, 100, 1, 1)  # expect: TL205
    return noise
