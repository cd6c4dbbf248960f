# label: harmless
# rule: TL204
import torch
import torch.nn as nn
import torch.nn.functional as F
import numpy as np
n = 3
t = torch.from_numpy(np.zeros(n, np.float32))
print("HAZARD" if t.dtype == torch.float64 else "ok")
