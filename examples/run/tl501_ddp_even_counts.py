"""TL501, balanced: every rank counts the same number of targets, so the mean is exact.

Each rank's shard holds the same number of padding labels, so the mean of per-rank means equals
the global mean: `torchlint run -- torchrun --nproc-per-node 2 examples/run/tl501_ddp_even_counts.py`
reports the static TL501 finding as not-observed, and exits 0."""

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

PADDING_EVERY = {0, 1}  # index % 4 in this set -> padding label; both ranks get the same share


def main() -> None:
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    inputs = torch.randn(128, 8)
    labels = torch.randint(0, 3, (128,))
    labels[[i for i in range(128) if i % 4 in PADDING_EVERY]] = -100
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
    main()
