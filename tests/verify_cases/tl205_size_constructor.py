# label: harmful
# rule: TL205
import torch
import torch.nn as nn
import torch.nn.functional as F
t = torch.FloatTensor(3)
print("HAZARD" if t.shape != (1,) else "ok")
