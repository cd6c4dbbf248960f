# label: harmful
# rule: TL701
import torch
import torch.nn as nn
class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = [nn.Linear(2, 2), nn.Linear(2, 2)]


print("HAZARD" if len(list(Stack().parameters())) == 0 else "ok")
