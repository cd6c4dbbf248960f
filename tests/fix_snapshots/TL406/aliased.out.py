import torch
import torch as T
from torch import exp, log, sum as tsum


def partition(scores):
    log_z = torch.logsumexp(scores, 1)  # expect: TL406
    return log_z


def energy_loss(energies, target):
    free = -T.logsumexp(-energies, 1)  # expect: TL406
    return free.mean() - target


def contrastive(sim, temperature):
    logits = sim / temperature
    denom = T.logsumexp(logits, -1, keepdim=True)  # expect: TL406
    return logits - denom


def sequence_likelihood(token_logps):
    return log(tsum(exp(token_logps)))  # expect: TL406


def total(x):
    return torch.exp(x).sum().log()  # expect: TL406


# --- near misses: must stay silent -------------------------------------------
def ok_stabilised(x):
    m = x.max(dim=1, keepdim=True).values
    return torch.log(torch.sum(torch.exp(x - m), dim=1)) + m.squeeze(1)


def ok_logsumexp(x):
    return torch.logsumexp(x, dim=1)


def ok_mean(x):
    return torch.log(torch.mean(torch.exp(x)))  # a mean, another expression


def ok_eps(x):
    return torch.log(torch.sum(torch.exp(x), dim=1) + 1e-8)


def ok_softplus(x):
    return torch.log(1 + torch.exp(x))


def ok_numpy(a):
    import numpy as np
    return np.log(np.sum(np.exp(a)))


def ok_math(values):
    import math
    return math.log(sum(math.exp(v) for v in values))


def ok_stabilised_by_name(x, dim):
    x_max = x.amax(dim, keepdim=True)
    shifted = x - x_max
    return shifted - torch.log(torch.sum(torch.exp(shifted), dim, keepdim=True))


def logsumexp(x, dim):
    if x.numel() == 0:
        return torch.sum(torch.exp(x), dim).log()  # the implementation itself: empty input
    return torch.logsumexp(x, dim)
