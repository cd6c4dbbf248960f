# label: harmful
# rule: TL107
import torch
import torch.nn as nn
import torch.nn.functional as F
model = nn.Linear(4, 1)
total = 0
for step in range(3):
    loss = model(torch.randn(2, 4)).sum()
    loss.backward()
    total += loss
print("HAZARD" if total.grad_fn is not None else "ok")
