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
    # ...whose graph is alive here: the caller's backward reads the clamped values unawares.
    return -(target_dist * probs.log()).sum(1).mean()


def update(batch, optimizer):
    loss = td_loss(*batch)  # td_loss runs inside this forward->backward window
    loss.backward()
    optimizer.step()


def clip_weights(net):
    for p in net.parameters():
        with torch.no_grad():
            p.clamp_(-0.01, 0.01)  # expect: TL102


def critic_step(critic, real, fake, opt):
    loss = critic(fake).mean() - critic(real).mean()
    clip_weights(critic)  # called between the forward and the backward
    loss.backward()
    opt.step()


def amp_step(model, scaler, opt, x):
    with torch.autocast("cuda"):
        out = model(x)
        loss = out.float().mean()
    for b in model.buffers():
        with torch.no_grad():
            b.copy_(b.data * 0.5)  # expect: TL102
    scaler.scale(loss).backward()
    scaler.step(opt)


def lightning_step(self, batch):
    loss = self.model(batch).sum()
    with torch.no_grad():
        self.model.head.weight.zero_()  # expect: TL102
    self.manual_backward(loss)


# --- near misses: must stay silent -------------------------------------------
def momentum_update(online, target, m):
    for src, dst in zip(online.parameters(), target.parameters()):
        dst.data.mul_(m).add_((1 - m) * src.detach().data)  # EMA between steps: no graph saved it


def sync_buffers(mine, theirs):
    for b_mine, b_theirs in zip(mine.buffers(), theirs.buffers()):
        b_mine.data.copy_(b_theirs.data)


def counters(groups):
    for group in groups:
        for name in group["names"]:
            name.data.append(1)  # not a parameter group's params, and not an in-place tensor op
