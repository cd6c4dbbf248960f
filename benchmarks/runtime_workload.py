"""A small but real training script for benchmarks/runtime_overhead.py: a CNN on synthetic
28x28 images, DataLoader with 2 workers, batch norm, dropout, Adam, an evaluation pass per
epoch. 50 optimizer steps; seconds on a CPU."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class SmallCnn(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.drop = nn.Dropout(0.25)
        self.fc = nn.Linear(16 * 7 * 7, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(self.drop(x.flatten(1)))


def main() -> None:
    torch.manual_seed(0)
    images, labels = torch.randn(1200, 1, 28, 28), torch.randint(0, 10, (1200,))
    train = DataLoader(TensorDataset(images[:1000], labels[:1000]), batch_size=40, shuffle=True, num_workers=2)
    val = DataLoader(TensorDataset(images[1000:], labels[1000:]), batch_size=100)
    model = SmallCnn()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(2):
        model.train()
        for x, y in train:
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
        model.eval()
        with torch.no_grad():
            val_loss = sum(F.cross_entropy(model(x), y, reduction="sum").item() for x, y in val) / 200
        print(f"epoch {epoch} train loss {loss.item():.4f} val loss {val_loss:.4f}")


if __name__ == "__main__":
    main()
