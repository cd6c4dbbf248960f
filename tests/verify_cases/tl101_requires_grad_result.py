# label: harmless
# rule: TL101
import torch
import torch.nn as nn
import torch.nn.functional as F
w = torch.randn(3)
with torch.no_grad():
    loss = (w * 2).sum().requires_grad_()
    loss.backward()
