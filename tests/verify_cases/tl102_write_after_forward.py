# label: harmful
# rule: TL102
import torch
import torch.nn as nn
import torch.nn.functional as F
w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
loss = (w * w).sum()
w.data.mul_(10.0)
loss.backward()
print("HAZARD" if w.grad.tolist() != [2.0, 4.0, 6.0] else "ok")
