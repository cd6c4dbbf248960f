import torch
from torch.cuda.amp import GradScaler, autocast

scaler = torch.amp.GradScaler("cuda")  # expect: TL906
scaler2 = GradScaler(init_scale=1024)  # expect: TL906
with torch.amp.autocast("cuda", dtype=torch.bfloat16):  # expect: TL906
    out = model(x)
with autocast():  # expect: TL906
    out = model(x)
with torch.amp.autocast("cpu"):  # expect: TL906
    out = model(x)
with torch.cuda.amp.autocast(True):  # expect: TL906
    out = model(x)


@torch.cuda.amp.custom_fwd  # expect: TL906
def forward(ctx, x):
    return x


# --- near misses: must stay silent -------------------------------------------
scaler = torch.amp.GradScaler("cuda")
with torch.amp.autocast("cuda", dtype=torch.bfloat16):
    out = model(x)
with torch.autocast(device_type="cuda"):
    out = model(x)
with apex.amp.autocast():
    out = model(x)
