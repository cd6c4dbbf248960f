# label: harmless
# rule: TL401
import torch
import torch.nn as nn
import torch.nn.functional as F
logits = torch.zeros(4, 3)  # a zero-initialised head: every class equally likely
y = torch.tensor([0, 2, 1, 2])
loss = F.cross_entropy(F.softmax(logits, dim=1), y)
print("HAZARD" if abs(loss.item() - F.cross_entropy(logits, y).item()) > 1e-5 else "ok")
