import torch

state = torch.load("model.pt", weights_only=True)  # expect: TL601
state = torch.load(path, map_location="cpu", weights_only=True)  # expect: TL601
model = torch.load(path, weights_only=False)  # expect: TL601

# --- near misses: must stay silent -------------------------------------------
state = torch.load(path, weights_only=True)
state = torch.load(path, **load_kwargs)  # may carry weights_only
try:
    state = torch.load(path, weights_only=True)
except TypeError:  # torch < 1.13 has no weights_only
    state = torch.load(path)
state = pickle.load(fh)
