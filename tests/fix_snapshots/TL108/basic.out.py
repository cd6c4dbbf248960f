import torch

with torch.no_grad():  # expect: TL108
    y = model(x)

with torch.enable_grad():  # expect: TL108
    y = model(x)

with torch.inference_mode():  # expect: TL108
    y = model(x)

# --- near misses: must stay silent -------------------------------------------
with torch.no_grad():
    y = model(x)
with torch.inference_mode(), open("f") as fh:
    pass
with lock:
    pass


@torch.no_grad  # a bare decorator is valid since torch 2.0
def predict(x):
    return model(x)
