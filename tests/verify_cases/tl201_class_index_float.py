# label: harmful
# rule: TL201
import torch
import torch.nn as nn
import torch.nn.functional as F
logits = torch.randn(4, 3)
labels = torch.tensor([0, 2, 1, 2])
loss = F.cross_entropy(logits, labels.float())
