"""TL102: "weight clipping" through `.data` placed between the forward and its backward.

`torchlint run -- python examples/run/tl102_data_write_before_backward.py` confirms it: the write
lands on weights that autograd saved for backward, so the gradient uses the clipped values."""

import torch
import torch.nn as nn


def main() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))
    criterion = nn.MSELoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x, y = torch.randn(32, 8), torch.randn(32, 1)
    for step in range(10):
        opt.zero_grad()
        loss = criterion(model(x), y)
        for p in model.parameters():
            p.data.clamp_(-0.2, 0.2)
        loss.backward()
        opt.step()
        print(f"step {step} loss {loss.item():.6f}")


if __name__ == "__main__":
    main()
