# label: harmful
# rule: TL204
import torch
import torch.nn as nn
import torch.nn.functional as F
import numpy as np
t = torch.from_numpy(np.random.rand(4, 3))
layer = nn.Linear(3, 2)
out = layer(t)
