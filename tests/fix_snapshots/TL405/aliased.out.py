import torch as T
import torch.nn.functional as Fn
from torch import log as ln
from torch.nn.functional import softmax as sm


def distill_loss(student_logits, teacher_logits, y):
    return Fn.nll_loss(T.log(sm(student_logits, dim=1)), y)  # expect: TL405:24


def cross_entropy_by_hand(logits, target):
    probs = Fn.softmax(logits, dim=-1)
    loss = -(ln(probs) * target).sum(dim=-1).mean()  # expect: TL405
    return loss


def policy_update(policy, states, actions, returns, optimizer):
    probs = policy(states).softmax(dim=-1)
    log_prob = T.log(probs[range(len(actions)), actions])  # expect: TL405
    entropy = -(probs * probs.log()).sum(-1).mean()  # expect: TL405
    policy_loss = -(log_prob * returns).mean() - 0.01 * entropy
    optimizer.zero_grad()
    policy_loss.backward()
    optimizer.step()


def kl_term(p_logits, q_logits):
    return Fn.kl_div(T.log_softmax(q_logits, 1), T.softmax(p_logits, 1), reduction="batchmean")  # expect: TL405


class Trainer:
    def step(self, logits, y):
        p = T.softmax(logits, dim=1)
        self.loss = -T.log(p.gather(1, y[:, None])).mean()  # expect: TL405


def gathered(logits, y):
    probs = Fn.softmax(logits, 1)
    chosen_loss = -T.log(probs.gather(1, y[:, None])).mean()  # expect: TL405
    return chosen_loss


# --- near misses: must stay silent -------------------------------------------
def with_eps(logits, y):
    probs = Fn.softmax(logits, dim=1)
    loss = Fn.nll_loss(T.log(probs + 1e-8), y)  # eps: no -inf (the weaker signal is documented)
    loss2 = Fn.nll_loss(T.log(probs.clamp(min=1e-8)), y)
    return loss + loss2


def metrics_only(logits):
    probs = Fn.softmax(logits, dim=1)
    confidence = T.log(probs).max(dim=1).values  # not in a loss
    return confidence


def already_log_softmax(logits, y):
    loss = Fn.nll_loss(Fn.log_softmax(logits, 1), y)
    return loss


def log_of_something_else(x, y):
    scale = T.sigmoid(x)
    loss = (T.log(scale) * y).mean()  # a sigmoid: another rule's business
    rate = T.log(x.exp().sum())
    return loss + rate


def other_libraries(p):
    import math

    import numpy as np
    probs = Fn.softmax(p, 1)
    loss = np.log(probs.numpy()).sum() + math.log(2.0)
    return loss
