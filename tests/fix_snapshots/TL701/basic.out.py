import torch.nn as nn


class Net(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(n)])  # expect: TL701
        self.heads = nn.ModuleDict({"a": nn.Linear(8, 2), "b": nn.Linear(8, 3)})  # expect: TL701
        self.pair = nn.ModuleList((nn.ReLU(), nn.Linear(8, 8)))  # expect: TL701

        # --- near misses: must stay silent -----------------------------------
        self.blocks = nn.ModuleList([nn.Linear(8, 8) for _ in range(n)])
        self.named = nn.ModuleDict({"a": nn.Linear(8, 2)})
        self.sizes = [8, 16, 32]
        self.names = ["a", "b"]


class Plain:
    def __init__(self):
        self.layers = [nn.Linear(2, 2)]  # not a module: nothing to register into


class PredictionBlock(nn.Module):
    def __init__(self, d, activation):
        super().__init__()
        self.layers = [nn.Linear(d, d), activation]
        for i, layer in enumerate(self.layers):
            self.add_module(str(i), layer)  # registered by hand
