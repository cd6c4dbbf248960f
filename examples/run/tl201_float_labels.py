"""TL201: class-index labels cast to float before CrossEntropyLoss.

`torchlint run -- python examples/run/tl201_float_labels.py` confirms it: the loss raises
"expected target dtype to be Long" at the first step."""

import torch
import torch.nn as nn


def main() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    criterion = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(64, 8), torch.randint(0, 3, (64,))
    for step in range(20):
        batch_x, batch_y = x[step % 4 * 16:][:16], y[step % 4 * 16:][:16]
        opt.zero_grad()
        loss = criterion(model(batch_x), batch_y.float())
        loss.backward()
        opt.step()
        print(f"step {step} loss {loss.item():.6f}")


if __name__ == "__main__":
    main()
