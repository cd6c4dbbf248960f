# label: harmless
# rule: TL109
import torch
import torch.nn as nn
import torch.nn.functional as F
x = torch.zeros(3, requires_grad=True)
x.require_grad = True
print("HAZARD" if not x.requires_grad else "ok")
