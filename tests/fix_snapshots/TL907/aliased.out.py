from torch import nn as tnn
from torch.nn import functional as tF

c = tnn.BCELoss(reduction='none')  # expect: TL907
l = tF.kl_div(a, b, reduction='sum')  # expect: TL907

# --- near misses: must stay silent -------------------------------------------
c = tnn.BCELoss(reduction="none")
