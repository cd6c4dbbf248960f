# label: harmful
# rule: TL201
import torch
import torch.nn as nn
import torch.nn.functional as F


def train_step(model, x, y):
    logits = model(x)
    return F.cross_entropy(logits, y.float())


def main():
    model = nn.Linear(4, 3)
    x = torch.randn(5, 4)
    y = torch.randint(0, 3, (5,))
    for epoch in range(2):
        loss = train_step(model, x, y)
        loss.backward()


if __name__ == "__main__":
    main()
