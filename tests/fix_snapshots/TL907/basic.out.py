import torch.nn as nn
import torch.nn.functional as F

crit = nn.MSELoss(reduction='sum')  # expect: TL907
crit = nn.CrossEntropyLoss(reduction='none')  # expect: TL907
crit = nn.L1Loss(reduction='mean')  # expect: TL907
loss = F.nll_loss(out, y, reduction='sum')  # expect: TL907
loss = F.binary_cross_entropy(p, y, size_average=avg)  # expect: TL907

# --- near misses: must stay silent -------------------------------------------
crit = nn.MSELoss(reduction="sum")
crit = MyLoss(size_average=False)
x = torch.sum(t, reduce=False)
stats = reduce_stats(x, size_average=True)
