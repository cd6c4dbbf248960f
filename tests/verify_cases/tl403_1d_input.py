# label: harmless
# rule: TL403
import torch
import torch.nn as nn
import torch.nn.functional as F
x = torch.randn(7)
p = F.softmax(x)
print("HAZARD" if not torch.allclose(p.sum(-1), torch.tensor(1.0)) else "ok")
