# label: harmless
# rule: TL205
import torch
import torch.nn as nn
import torch.nn.functional as F
t = torch.Tensor([1.0, 2.0, 3.0])
print("HAZARD" if t.tolist() != [1.0, 2.0, 3.0] else "ok")
