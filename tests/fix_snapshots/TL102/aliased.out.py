import torch as T
import torch.nn as tnn
from torch.nn import Parameter as P

lin = tnn.Linear(3, 3)
scale = P(T.ones(3))
optim = T.optim.Adam(lin.parameters())

for batch in batches:
    logits = lin(batch) * scale
    objective = logits.pow(2).sum()
    for prm in lin.parameters():
        with T.no_grad():
            prm.mul_(0.5)  # expect: TL102
        prm.data += 1  # expect: TL102
    scale.data = T.zeros(3)  # expect: TL102
    T.autograd.backward(objective)
    optim.step()

# --- near misses: must stay silent -------------------------------------------
for batch in batches:
    scale.data = T.zeros(3)  # before this iteration's forward: the last graph is gone
    objective = (lin(batch) * scale).sum()
    objective.backward()
record = make_record()
record.data = [1, 2, 3]  # a plain object that happens to have a .data attribute
