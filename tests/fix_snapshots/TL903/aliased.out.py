import torch.utils.checkpoint as cp
from torch.utils.checkpoint import checkpoint as ckpt

h = cp.checkpoint(layer, h, use_reentrant=False)  # expect: TL903
h = ckpt(layer, h, use_reentrant=False)  # expect: TL903

# --- near misses: must stay silent -------------------------------------------
h = cp.checkpoint(layer, h, use_reentrant=False)
h = deepspeed.checkpointing.checkpoint(layer, h)
