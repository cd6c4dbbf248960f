# label: harmless
# rule: TL704
import torch
import torch.nn as nn


def _switch_to_training(m):
    m.train()


def start_epoch(m):
    # Two calls deep: the linter follows one level of same-file calls, so it still reports;
    # running it shows the mode is restored.
    _switch_to_training(m)


net = nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.2))
sgd = torch.optim.SGD(net.parameters(), lr=0.05)
seen = []
for epoch in range(2):
    start_epoch(net)
    seen.append(net.training)
    sgd.zero_grad()
    net(torch.randn(4, 3)).sum().backward()
    sgd.step()
    net.eval()
print("HAZARD" if seen != [True, True] else "ok")
