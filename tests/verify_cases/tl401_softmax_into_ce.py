# label: harmful
# rule: TL401
import torch
import torch.nn as nn
import torch.nn.functional as F
logits = torch.tensor([[8.0, 0.0, 0.0]])
target = torch.tensor([0])
wrong = F.cross_entropy(F.softmax(logits, dim=1), target)
right = F.cross_entropy(logits, target)
print("HAZARD" if abs(wrong.item() - right.item()) > 1e-3 else "ok")
