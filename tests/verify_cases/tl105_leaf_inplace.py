# label: harmful
# rule: TL105
import torch
import torch.nn as nn
import torch.nn.functional as F
w = torch.randn(3, requires_grad=True)
w -= 0.1
