# label: harmless
# rule: TL201
import torch
import torch.nn as nn
import torch.nn.functional as F
logits = torch.randn(4, 3)
soft = torch.softmax(torch.randn(4, 3), dim=1)
loss = F.cross_entropy(logits, soft.float())
