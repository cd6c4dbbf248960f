"""Writes between two training steps: the previous graph was consumed by its backward and the
next forward has not run, so no saved tensor can be changed. Preparing fresh inputs (noise,
a batch moved to the device) does not start a forward."""
import torch


# --- near misses: must stay silent -------------------------------------------
def wgan(loader, critic, gen, c_opt, g_opt):
    for real, _ in loader:
        noise = torch.randn(real.size(0), 64)
        real = real.cuda()
        c_loss = critic(gen(noise)).mean() - critic(real).mean()
        c_opt.zero_grad()
        c_loss.backward()
        c_opt.step()
        for p in critic.parameters():
            p.data.clamp_(-0.01, 0.01)  # the critic's clip, before the generator's forward
        g_loss = -critic(gen(noise)).mean()
        g_opt.zero_grad()
        g_loss.backward()
        g_opt.step()


def hand_sgd(xs, ys, w, b, lr):
    for x, y in zip(xs, ys):
        x = torch.as_tensor(x)
        loss = ((x @ w + b - y) ** 2).mean()
        loss.backward()
        w.data -= lr * w.grad.data  # after the backward that used w
        b.data -= lr * b.grad.data


# --- the twin: the clip after the generator's forward, before its backward ----
def wgan_late_clip(loader, critic, gen, g_opt):
    for real, _ in loader:
        noise = torch.randn(real.size(0), 64)
        g_loss = -critic(gen(noise)).mean()
        for p in critic.parameters():
            with torch.no_grad():
                p.clamp_(-0.01, 0.01)  # expect: TL102
        g_loss.backward()
        g_opt.step()
