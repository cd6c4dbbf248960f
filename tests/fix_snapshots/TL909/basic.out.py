import torch
import torch.nn as nn
import torch.nn.functional as F

criterion = nn.CrossEntropyLoss()
loss = criterion(output, target)
total += loss.item()  # expect: TL909
nll = F.nll_loss(out, y)
print(nll.item())  # expect: TL909
s = (pred - y).pow(2).sum()
s.item()  # expect: TL909
value = loss_fn(out, y).item()  # expect: TL909

# --- near misses: must stay silent -------------------------------------------
per_sample = F.cross_entropy(out, y, reduction="none")
first = per_sample.data[0]
batch = next(it)
x0 = batch.data[0]
loss = criterion(output, target)
total += loss.item()
rows = (pred - y).sum(dim=1)
r0 = rows.data[0]
legacy = F.mse_loss(a, b, reduce=False)
l0 = legacy.data[0]
