import torch
import torch.optim.lr_scheduler as lrs
from torch.optim import lr_scheduler
from torch.optim.lr_scheduler import StepLR as Step
from transformers import get_linear_schedule_with_warmup


def train(model, loader, writer):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scheduler = Step(opt, step_size=30, gamma=0.1)
    for epoch in range(90):
        for x, y in loader:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()
        scheduler.step()
        writer.add_scalar("lr", scheduler.get_last_lr()[0], epoch)  # expect: TL910


def finetune(model, steps):
    opt = torch.optim.AdamW(model.parameters(), lr=5e-5)
    sched = get_linear_schedule_with_warmup(opt, 100, steps)
    print(f"lr {sched.get_last_lr()}")  # expect: TL910
    cos = lrs.CosineAnnealingLR(opt, T_max=steps)
    return cos.get_last_lr()  # expect: TL910


class Trainer:
    def __init__(self, opt):
        self.scheduler = lr_scheduler.ExponentialLR(opt, gamma=0.9)

    def log(self):
        return {"lr": self.scheduler.get_last_lr()[0]}  # expect: TL910


# --- near misses: must stay silent -------------------------------------------
class WarmupLR(lr_scheduler.LRScheduler):
    def get_lr(self):
        return [base * min(1.0, self.last_epoch / 100) for base in self.base_lrs]

    def closed(self):
        return self.get_lr()  # the subclass's own hook


class Cosine(lr_scheduler.CosineAnnealingLR):
    def get_lr(self):
        return super().get_lr()


def ok_last(opt):
    scheduler = Step(opt, step_size=30)
    return scheduler.get_last_lr()


def ok_unknown(scheduler):
    return scheduler.get_lr()  # type unknown: a custom scheduler may define get_lr as its API


def ok_custom(opt):
    sched = MyWarmup(opt)
    return sched.get_lr()


def ok_adafactor(opt):
    from transformers.optimization import AdafactorSchedule
    sched = AdafactorSchedule(opt)
    return sched.get_lr()  # AdafactorSchedule.get_lr is its API


def ok_rebound(opt):
    sched = Step(opt, step_size=1)
    sched = build(opt)
    return sched.get_lr()
