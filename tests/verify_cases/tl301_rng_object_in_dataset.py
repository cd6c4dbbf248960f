# label: harmful
# rule: TL301
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset
class Noisy(Dataset):
    def __init__(self, n):
        self.n = n
        self.rng = np.random.default_rng(0)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.rng.random()


if __name__ == "__main__":
    loader = DataLoader(Noisy(8), batch_size=2, num_workers=2)
    batches = [b.tolist() for b in loader]
    print("HAZARD" if batches[0] == batches[1] else "ok")
