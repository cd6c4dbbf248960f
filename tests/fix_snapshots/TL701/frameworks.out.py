import torch.nn as nn
from transformers.modeling_utils import PreTrainedModel


class Stack(PreTrainedModel):
    def __init__(self, config):
        super().__init__(config)
        self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(4)])  # expect: TL701


# --- near misses: must stay silent -------------------------------------------
class RegisteredStack(PreTrainedModel):
    def __init__(self, config):
        super().__init__(config)
        self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(4)])
