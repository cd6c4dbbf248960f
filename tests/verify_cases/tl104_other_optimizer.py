# label: harmless
# rule: TL104
import torch
import torch.nn as nn
model = nn.Linear(2, 1)
head = nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.5)
head_opt = torch.optim.SGD(head.parameters(), lr=0.5)
before = model.weight.detach().clone()
model(torch.ones(1, 2)).sum().backward()
head_opt.zero_grad()
opt.step()
print("HAZARD" if torch.equal(before, model.weight.detach()) else "ok")
