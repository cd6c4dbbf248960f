# label: harmless
# rule: TL202
import torch
import torch.nn as nn
import torch.nn.functional as F
x = torch.randn(2, 3)
x.float()
print("HAZARD" if x.dtype != torch.float32 else "ok")
