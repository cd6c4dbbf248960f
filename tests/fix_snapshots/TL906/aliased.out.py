import torch as T
from torch.cuda import amp

scaler = T.amp.GradScaler("cuda")  # expect: TL906
with T.amp.autocast("cuda", enabled=use_amp):  # expect: TL906
    y = net(x)

# --- near misses: must stay silent -------------------------------------------
with T.amp.autocast("cuda", enabled=use_amp):
    y = net(x)
