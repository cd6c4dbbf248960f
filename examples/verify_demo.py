"""A small, runnable script for `torchlint check examples/verify_demo.py --verify`.

Two findings of the same rule (TL201, float-cast targets of a cross-entropy loss): one is a
real bug, one is harmless. `--verify` runs this file's own code for each and tells them apart.
"""

import torch
import torch.nn.functional as F

logits = torch.randn(4, 3)
labels = torch.tensor([0, 2, 1, 2])
# A bug: class-index targets cast to float. torch raises at this call.
hard_loss = F.cross_entropy(logits, labels.float())

# Harmless: (N, C) class probabilities are a valid float target ("soft labels").
soft_labels = torch.softmax(torch.randn(4, 3), dim=1)
soft_loss = F.cross_entropy(logits, soft_labels.float())
