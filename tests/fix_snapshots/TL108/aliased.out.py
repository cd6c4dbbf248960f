import torch as T
from torch import no_grad

with no_grad():  # expect: TL108
    pass
with open("x") as f, T.no_grad():  # expect: TL108
    pass
