# label: harmful
# rule: TL702
import torch
import torch.nn as nn
class Net(nn.Module):
    def __init__(self):
        self.fc = nn.Linear(2, 2)


net = Net()
