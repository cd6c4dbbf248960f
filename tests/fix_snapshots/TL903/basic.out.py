import torch
import torch.utils.checkpoint
from torch.utils.checkpoint import checkpoint, checkpoint_sequential


def forward(self, x):
    x = checkpoint(self.block, x, use_reentrant=False)  # expect: TL903
    y = torch.utils.checkpoint.checkpoint(self.block, x, preserve_rng_state=False, use_reentrant=False)  # expect: TL903
    z = checkpoint_sequential(self.layers, 2, x, use_reentrant=False)  # expect: TL903
    return x + y + z


# --- near misses: must stay silent -------------------------------------------
def forward_ok(self, x):
    x = checkpoint(self.block, x, use_reentrant=False)
    y = checkpoint_sequential(self.layers, 2, x, use_reentrant=True)
    z = checkpoint(self.block, x, **self.ckpt_kwargs)  # may carry use_reentrant
    w = self.checkpoint(x)  # not torch's
    return x + y + z + w
