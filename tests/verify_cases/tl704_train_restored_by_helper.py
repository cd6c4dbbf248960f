# label: harmless
# rule: TL704
import torch
import torch.nn as nn


def set_train(m):
    m.train()


model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
modes = []
for epoch in range(2):
    set_train(model)
    modes.append(model.training)
    opt.zero_grad()
    model(torch.randn(2, 4)).sum().backward()
    opt.step()
    model.eval()
print("HAZARD" if modes != [True, True] else "ok")
