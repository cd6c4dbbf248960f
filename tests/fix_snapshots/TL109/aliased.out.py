import torch as T
from torch.nn import Parameter as P

w = P(T.zeros(2), requires_grad=False)  # expect: TL109
