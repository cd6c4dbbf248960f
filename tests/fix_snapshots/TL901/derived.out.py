"""Rows the derivation added: what torch 2.13 itself warns about or no longer has."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch._six import inf  # expect: TL901
from torch.nn import init

torch.set_default_tensor_type(torch.cuda.FloatTensor)  # expect: TL901
gx, gy = torch.meshgrid(torch.arange(3), torch.arange(4), indexing="ij")  # expect: TL901
up = F.interpolate(feat, scale_factor=2)  # expect: TL901
up = F.upsample_bilinear(feat, scale_factor=2)  # expect: TL901
init.xavier_uniform_(layer.weight)  # expect: TL901
init.constant_(layer.bias, 0.0)  # expect: TL901
nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # expect: TL901
used = torch.cuda.memory_reserved()  # expect: TL901

# --- near misses: must stay silent -------------------------------------------
gx, gy = torch.meshgrid(torch.arange(3), torch.arange(4), indexing="xy")
gx, gy = torch.meshgrid(*axes, **grid_options)  # may carry indexing=
up = F.interpolate(feat, scale_factor=2)
init.xavier_uniform_(layer.weight)
nn.init.normal_(layer.weight, 0.0, 0.02)
noise = torch.normal(0.0, 1.0, size=(3,))  # torch.normal is not nn.init.normal
nn.utils.clip_grad_norm_(model.parameters(), 1.0)
import math  # noqa: E402
big = math.inf
