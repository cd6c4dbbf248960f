"""A small DDP training script with the mistakes torchlint is built to catch.

Run `torchlint check examples/` to see them; `torchlint check examples/ --verify`
runs a probe for each finding under the installed torch.
"""

import os

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset


class NoisyTokens(Dataset):
    def __init__(self, n: int) -> None:
        self.n = n
        self.rng = np.random.default_rng(0)  # copied into every worker

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, idx: int):
        x = torch.randn(16) + torch.from_numpy(self.rng.normal(size=16)).float()
        y = torch.tensor(idx % 4)
        return x, y


class Classifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)


def main() -> None:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = DDP(Classifier())
    for p in model.parameters():
        p.data.uniform_(-0.1, 0.1)  # bypasses autograd
    criterion = nn.CrossEntropyLoss(ignore_index=-100)  # mean per rank, then DDP averages
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(NoisyTokens(1000), batch_size=32, num_workers=2)  # no DistributedSampler

    for epoch in range(3):
        for x, y in loader:
            opt.zero_grad()
            loss = criterion(model(x), y.float())  # float labels for a class-index loss
            loss.backward()
            opt.step()

        # "Evaluation" that also tries to fine-tune: backward under no_grad raises.
        with torch.no_grad():
            for x, y in loader:
                val_loss = F.cross_entropy(model(x), y)
                val_loss.backward()

    if rank == 0:
        torch.save(model.module.state_dict(), os.path.join("/tmp", "classifier.pt"))


if __name__ == "__main__":
    main()
