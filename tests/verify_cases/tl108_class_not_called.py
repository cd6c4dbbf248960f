# label: harmful
# rule: TL108
import torch
import torch.nn as nn
import torch.nn.functional as F
x = torch.ones(2)
with torch.no_grad:
    y = x * 2
