# label: harmless
# rule: TL102
import torch
import torch.nn as nn
import torch.nn.functional as F
w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
w.data.mul_(10.0)
loss = (w * w).sum()
loss.backward()
print("HAZARD" if w.grad.tolist() != [20.0, 40.0, 60.0] else "ok")
