"""TL501: reduction='mean' under DDP while ranks count different numbers of targets.

By default rank 0's shard holds all the padding (ignore_index) labels, so each rank averages
over a different number of targets and DDP's mean of per-rank means is not the global mean:

    torchlint run -- torchrun --nproc-per-node 2 examples/run/tl501_ddp_counts.py

confirms it with the real per-rank counts. With `--balanced` both ranks get the same share of
padding, the mean of means equals the global mean, and torchlint run reports the same static
finding as not-observed and exits 0:

    torchlint run -- torchrun --nproc-per-node 2 examples/run/tl501_ddp_counts.py --balanced
"""

import sys

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def main(padding: set) -> None:
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    inputs = torch.randn(128, 8)
    labels = torch.randint(0, 3, (128,))
    labels[[i for i in range(128) if i % 4 in padding]] = -100  # DistributedSampler: even i -> rank 0
    data = TensorDataset(inputs, labels)
    loader = DataLoader(data, batch_size=16, sampler=DistributedSampler(data, shuffle=False))
    model = DDP(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)))
    criterion = nn.CrossEntropyLoss(ignore_index=-100)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        opt.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        opt.step()
        print(f"rank {dist.get_rank()} loss {loss.item():.6f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main({0, 1} if "--balanced" in sys.argv[1:] else {0})
