import torch
import torch.utils.data
from torch.utils.data import default_collate  # expect: TL904

batch = torch.utils.data.default_collate(samples)  # expect: TL904
conv = torch.utils.data.default_convert(sample)  # expect: TL904

# --- near misses: must stay silent -------------------------------------------
from torch.utils.data import default_collate, default_convert
from torch.utils.data._utils.collate import collate  # not one of the two public names
batch = torch.utils.data.default_collate(samples)
batch = my_utils.collate.default_collate(samples)
