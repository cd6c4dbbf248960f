import torch

a = torch.log1p(x)  # expect: TL905
b = torch.log1p(x)  # expect: TL905
c = torch.expm1(x)  # expect: TL905
d = torch.log1p(p.sigmoid())  # expect: TL905
e = torch.expm1(2 * x)  # expect: TL905

# --- near misses: must stay silent -------------------------------------------
a = torch.log1p(x)
b = torch.log(2 + x)
c = torch.exp(x) - 2
d = torch.log(x)
e = 1 - torch.exp(x)
f = math.log(1 + x)
g = np.log(1 + x)
h = torch.log(1 + x, out=buf)  # keyword arguments: left alone
