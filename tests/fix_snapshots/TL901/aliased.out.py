import torch as T
from torch import nn as tnn
from torch import solve, norm as tnorm
from functorch import grad

x = solve(b, a)  # expect: TL901
n = tnorm(x)  # expect: TL901
g = grad(f)  # expect: TL901
c = T.chain_matmul(a, b, c)  # expect: TL901
m = tnn.Upsample(None, 2, mode="nearest")  # expect: TL901

# --- near misses: must stay silent -------------------------------------------
y = T.linalg.multi_dot([a, b, c])
z = T.func.grad(f)


def fit(solve):
    return solve(a)  # a parameter that happens to be called `solve`
