import torch as T
from torch import log

a = T.log1p(x)  # expect: TL905
b = T.expm1(y)  # expect: TL905
c = log(1 + x)  # expect: TL905

# --- near misses: must stay silent -------------------------------------------
d = T.log1p(x)
e = T.expm1(y)
