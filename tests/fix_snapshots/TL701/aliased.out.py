from torch import nn as tnn


class Block(tnn.Module):
    pass


class Stack(tnn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = tnn.ModuleList([Block(), Block()])  # expect: TL701
