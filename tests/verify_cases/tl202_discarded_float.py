# label: harmful
# rule: TL202
import torch
import torch.nn as nn
import torch.nn.functional as F
x = torch.arange(6).reshape(2, 3)
x.float()
print("HAZARD" if x.dtype != torch.float32 else "ok")
