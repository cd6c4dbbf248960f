# label: harmless
# rule: TL702
import torch
import torch.nn as nn
import torch.nn.functional as F
class Scale(nn.Module):
    def __init__(self):
        self.factor = 2.0


s = Scale()
