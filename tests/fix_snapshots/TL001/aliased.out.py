import torch as T
from torch import nn as tnn

layer = tnn.Linear(2, 2)  # expect: TL001
w = T.zeros(2)  # noqa: TL101  # expect: TL001

# --- near misses: must stay silent -------------------------------------------
v = T.zeros(2)  # noqa: TL101
u = T.zeros(2)  # noqa:E501
