import functorch
import torch
import torch.nn as nn

x = torch.solve(b, a)  # expect: TL901
e = torch.symeig(a)  # expect: TL901
q, r = torch.qr(a)  # expect: TL901
L = torch.linalg.cholesky(a)  # expect: TL901
U = torch.cholesky(a, upper=True)  # expect: TL901
n = torch.norm(x, dim=1)  # expect: TL901
o = torch.outer(u, v)  # expect: TL901
r = torch.range(0, 10)  # expect: TL901
up = nn.Upsample(scale_factor=2, mode="nearest")  # expect: TL901
bi = nn.Upsample(size=(8, 8), mode="bilinear", align_corners=True)  # expect: TL901
torch.testing.assert_allclose(x, y)  # expect: TL901
layer = nn.utils.weight_norm(nn.Linear(2, 2))  # expect: TL901
with torch.backends.cuda.sdp_kernel(enable_math=False):  # expect: TL901
    pass
batched = torch.func.vmap(f)  # expect: TL901
lu = torch.lu_solve(b, LU, pivots)  # expect: TL901

# --- near misses: must stay silent -------------------------------------------
x = torch.linalg.solve(a, b)
n = torch.linalg.vector_norm(x)
n = x.norm()  # the Tensor method is not in the table
o = torch.outer(u, v)
r = torch.arange(0, 11)
up = nn.Upsample(scale_factor=2, mode="nearest")
torch.testing.assert_close(x, y)
layer = nn.utils.parametrizations.weight_norm(nn.Linear(2, 2))
batched = torch.func.vmap(f)
norm = nn.LayerNorm(8)
y = norm(x)  # a local called `norm`
qr = my_lib.qr(a)  # not torch
fn = torch.lu_solve  # a reference, not a call: calls are what TL901 checks
