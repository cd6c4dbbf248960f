# label: harmful
# rule: TL101
import torch
import torch.nn as nn


def train_step(model, x):
    with torch.no_grad():
        loss = model(x).sum()
        loss.backward()


if __name__ == "__main__":
    train_step(nn.Linear(4, 2), torch.randn(3, 4))
