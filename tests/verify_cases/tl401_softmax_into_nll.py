# label: harmful
# rule: TL401
import torch
import torch.nn as nn
import torch.nn.functional as F
logits = torch.tensor([[8.0, 0.0, 0.0]])
target = torch.tensor([0])
probs = F.softmax(logits, dim=1)
loss = F.nll_loss(probs, target)
print("HAZARD" if loss.item() < 0 else "ok")
