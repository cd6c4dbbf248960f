# label: harmless
# rule: TL701
import torch
import torch.nn as nn
import torch.nn.functional as F
class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = [nn.Linear(2, 2)]
        self.layers = nn.ModuleList(self.layers)


print("HAZARD" if len(list(Stack().parameters())) != 2 else "ok")
