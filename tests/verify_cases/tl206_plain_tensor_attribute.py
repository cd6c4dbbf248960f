# label: harmful
# rule: TL206
import torch
import torch.nn as nn
class Masked(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)
        self.mask = torch.ones(2)


m = Masked()
print("HAZARD" if "mask" not in m.state_dict() else "ok")
