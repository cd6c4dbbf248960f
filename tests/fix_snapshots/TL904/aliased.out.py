import torch as T
from torch.utils.data import default_collate as dc, default_convert  # expect: TL904

b = T.utils.data.default_collate(s)  # expect: TL904

# --- near misses: must stay silent -------------------------------------------
from torch.utils.data import default_collate as dc2
b = T.utils.data.default_collate(s)
