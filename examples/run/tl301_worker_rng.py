"""TL301: a NumPy Generator created in `Dataset.__init__` is copied into every DataLoader worker.

`torchlint run -- python examples/run/tl301_worker_rng.py` confirms it with each worker's first
draws from `self.rng`: both workers produce the same "random" augmentation."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class JitteredPoints(Dataset):
    def __init__(self, n: int) -> None:
        self.points = torch.randn(n, 8)
        self.labels = torch.arange(n) % 3
        self.rng = np.random.default_rng(0)

    def __len__(self) -> int:
        return len(self.points)

    def __getitem__(self, idx: int):
        noise = torch.from_numpy(self.rng.normal(scale=0.1, size=8)).float()
        return self.points[idx] + noise, self.labels[idx]


def main() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(JitteredPoints(64), batch_size=8, num_workers=2)
    for epoch in range(2):
        for x, y in loader:
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            print(f"epoch {epoch} loss {loss.item():.6f}")


if __name__ == "__main__":
    main()
