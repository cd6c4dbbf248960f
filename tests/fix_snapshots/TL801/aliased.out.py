import torch as T
from torch import ones

m = ones(2, device="cuda")  # expect: TL801
n = T.eye(3, device=dev)  # expect: TL801
