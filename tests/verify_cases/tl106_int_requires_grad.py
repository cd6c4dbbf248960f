# label: harmful
# rule: TL106
import torch
import torch.nn as nn
import torch.nn.functional as F
t = torch.tensor([1, 2, 3], requires_grad=True)
