# label: harmless
# rule: TL301
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class Noisy(Dataset):
    def __init__(self, n):
        self.n = n
        self.rng = np.random.default_rng(0)
        self.seeded = False

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        info = torch.utils.data.get_worker_info()
        if info is not None and not self.seeded:
            self.rng = np.random.default_rng(info.seed % 2**32)
            self.seeded = True
        return self.rng.random()


if __name__ == "__main__":
    loader = DataLoader(Noisy(8), batch_size=2, num_workers=2)
    batches = [b.tolist() for b in loader]
    print("HAZARD" if batches[0] == batches[1] else "ok")
