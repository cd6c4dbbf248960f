"""TL101: an "evaluation" pass that also calls backward inside `torch.no_grad()`.

`torchlint run -- python examples/run/tl101_backward_under_no_grad.py` confirms it: grad mode is
off at the call and backward raises "element 0 of tensors does not require grad"."""

import torch
import torch.nn as nn
import torch.nn.functional as F


def main() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(48, 8), torch.randint(0, 3, (48,))
    for epoch in range(2):
        for start in range(0, 48, 16):
            opt.zero_grad()
            loss = F.cross_entropy(model(x[start:start + 16]), y[start:start + 16])
            loss.backward()
            opt.step()
            print(f"epoch {epoch} loss {loss.item():.6f}")
        with torch.no_grad():
            val_loss = F.cross_entropy(model(x), y)
            val_loss.backward()


if __name__ == "__main__":
    main()
