# label: harmless
# rule: TL202
import torch
import torch.nn as nn
import torch.nn.functional as F
x = torch.randn(3, 4)
x.contiguous()
print("HAZARD" if not x.is_contiguous() else "ok")
