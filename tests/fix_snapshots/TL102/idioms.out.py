import torch
from torch import nn


class Scorer(nn.Module):
    def forward(self, obs):
        return self.net(obs)


scorer = Scorer()
if torch.cuda.is_available():
    scorer = scorer.cuda()  # still the same module


def td_loss(obs, picked, target_dist):
    probs = scorer(obs)  # calling a module gives a tensor...
    probs = probs.gather(1, picked).squeeze(1)
    with torch.no_grad():
        probs.clamp_(1e-3, 1.0)  # expect: TL102
    # ...whose graph is alive here: backward below reads the clamped values unawares.
    return -(target_dist * probs.log()).sum(1).mean()


def momentum_update(online, target, m):
    for src, dst in zip(online.parameters(), target.parameters()):
        dst.data.mul_(m).add_((1 - m) * src.detach().data)  # expect: TL102


def sgd_step(optimizer):
    for group in optimizer.param_groups:
        for p in group["params"]:
            with torch.no_grad():
                p.add_(p.grad, alpha=-group["lr"])  # expect: TL102


def sync_buffers(mine, theirs):
    for b_mine, b_theirs in zip(mine.buffers(), theirs.buffers()):
        with torch.no_grad():
            b_mine.copy_(b_theirs.data)  # expect: TL102


# --- near misses: must stay silent -------------------------------------------
def counters(groups):
    for group in groups:
        for name in group["names"]:
            name.data.append(1)  # not a parameter group's params, and not an in-place tensor op
    for i, p in enumerate(zip(a, b)):
        p.data.add_(1)  # a zip of unknown iterables
