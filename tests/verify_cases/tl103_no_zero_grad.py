# label: harmful
# rule: TL103
import torch
import torch.nn as nn
model = nn.Linear(2, 1, bias=False)
opt = torch.optim.SGD(model.parameters(), lr=0.0)
x = torch.ones(1, 2)
for step in range(2):
    model(x).sum().backward()
    opt.step()
print("HAZARD" if model.weight.grad.tolist() != [[1.0, 1.0]] else "ok")
