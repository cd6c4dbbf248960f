import torch as T
from torch import Tensor, LongTensor

a = Tensor(10)  # expect: TL205
b = T.tensor([1, 2], dtype=T.int64)  # expect: TL205
c = T.ByteTensor(4)  # expect: TL205


class MyTensor(Tensor):  # a base class, not a call
    pass
