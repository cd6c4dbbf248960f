from torch import load as tload

ckpt = tload("x.ckpt", weights_only=True)  # expect: TL601
