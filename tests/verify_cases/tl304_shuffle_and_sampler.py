# label: harmful
# rule: TL304
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, RandomSampler
data = list(range(8))
loader = DataLoader(data, shuffle=True, sampler=RandomSampler(data))
