import torch as T
import torch.nn as tnn
from torch.nn import Parameter as P

lin = tnn.Linear(3, 3)
for prm in lin.parameters():
    with T.no_grad():
        prm.mul_(0.5)  # expect: TL102
    prm.data += 1  # expect: TL102

scale = P(T.ones(3))
scale.data = T.zeros(3)  # expect: TL102

x = T.zeros(3)
x.data = T.ones(3)  # expect: TL102

# near miss: a plain object that happens to have a .data attribute
record = make_record()
record.data = [1, 2, 3]
