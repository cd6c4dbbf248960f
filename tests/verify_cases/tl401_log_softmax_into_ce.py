# label: harmless
# rule: TL401
import torch
import torch.nn as nn
import torch.nn.functional as F
logits = torch.randn(4, 3)
y = torch.tensor([0, 2, 1, 2])
loss = F.cross_entropy(F.log_softmax(logits, dim=1), y)
print("HAZARD" if abs(loss.item() - F.cross_entropy(logits, y).item()) > 1e-5 else "ok")
