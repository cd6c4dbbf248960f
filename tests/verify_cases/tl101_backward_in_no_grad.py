# label: harmful
# rule: TL101
import torch
import torch.nn as nn
import torch.nn.functional as F
model = nn.Linear(4, 2)
x = torch.randn(3, 4)
with torch.no_grad():
    loss = model(x).sum()
    loss.backward()
