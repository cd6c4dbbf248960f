# label: harmful
# rule: TL104
import torch
import torch.nn as nn
model = nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.5)
before = model.weight.detach().clone()
model(torch.ones(1, 2)).sum().backward()
opt.zero_grad()
opt.step()
print("HAZARD" if torch.equal(before, model.weight.detach()) else "ok")
