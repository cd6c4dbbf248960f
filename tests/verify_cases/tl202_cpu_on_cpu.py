# label: harmless
# rule: TL202
import torch
import torch.nn as nn
import torch.nn.functional as F
x = torch.randn(3)
x.cpu()
print("HAZARD" if x.device.type != "cpu" else "ok")
