# label: harmful
# rule: TL704
import torch
import torch.nn as nn
model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
modes = []
for epoch in range(2):
    modes.append(model.training)
    model(torch.randn(2, 4)).sum().backward()
    opt.step()
    model.eval()
print("HAZARD" if modes != [True, True] else "ok")
