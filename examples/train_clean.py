"""The same script written correctly: `torchlint check examples/train_clean.py` passes."""

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler, get_worker_info


class NoisyTokens(Dataset):
    def __init__(self, n: int) -> None:
        self.n = n
        self.rng = np.random.default_rng(0)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, idx: int):
        x = torch.randn(16) + torch.from_numpy(self.rng.normal(size=16)).float()
        return x, torch.tensor(idx % 4)


def seed_worker(worker_id: int) -> None:
    info = get_worker_info()
    info.dataset.rng = np.random.default_rng(info.seed % 2**32)


def main() -> None:
    dist.init_process_group("gloo")
    model = DDP(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)))
    with torch.no_grad():
        for p in model.parameters():
            p.uniform_(-0.1, 0.1)
    criterion = nn.CrossEntropyLoss(ignore_index=-100, reduction="sum")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    dataset = NoisyTokens(1000)
    sampler = DistributedSampler(dataset)  # each rank trains on its own shard, not on all of it
    loader = DataLoader(dataset, batch_size=32, sampler=sampler, num_workers=2, worker_init_fn=seed_worker)

    for epoch in range(3):
        sampler.set_epoch(epoch)  # a new shuffle each epoch
        for x, y in loader:
            opt.zero_grad()
            count = (y != -100).sum()
            dist.all_reduce(count)
            loss = criterion(model(x), y) * dist.get_world_size() / count
            loss.backward()
            opt.step()

        with torch.no_grad():
            for x, y in loader:
                val_loss = F.cross_entropy(model(x), y, reduction="sum")


if __name__ == "__main__":
    main()
