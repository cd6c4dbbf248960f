# label: harmful
# rule: TL201
import torch
import torch.nn.functional as F


def main():
    logits = torch.randn(8, 5)
    labels = torch.randint(0, 5, (8,))
    return F.cross_entropy(logits, labels.float())


if __name__ == "__main__":
    main()
