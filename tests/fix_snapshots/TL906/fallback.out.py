import torch

scaler = torch.amp.GradScaler("cuda")  # expect: TL906

# --- near misses: must stay silent -------------------------------------------
try:
    scaler = torch.amp.GradScaler("cuda")
except (AttributeError, TypeError):
    scaler = torch.cuda.amp.GradScaler()  # the fallback for a torch without torch.amp


def autocast_ctx():
    try:
        return torch.amp.autocast("cuda", dtype=torch.float16)
    except (AttributeError, TypeError, ImportError):
        return torch.cuda.amp.autocast(dtype=torch.float16)
