# label: harmful
# rule: TL101
import torch
import torch.nn as nn


def evaluate(model, batches, scale=2.0):
    model.eval()
    with torch.no_grad():
        for x in batches:
            out = model(x) * scale
            out.sum().backward()


net = nn.Linear(3, 1)
evaluate(net, [torch.randn(2, 3)])
