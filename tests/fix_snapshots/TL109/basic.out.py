import torch

x = torch.zeros(3)
x.requires_grad = True  # expect: TL109
model.weight.requires_grad = False  # expect: TL109
y = torch.ones(3, requires_grad=True)  # expect: TL109

# --- near misses: must stay silent -------------------------------------------
x.requires_grad = True
z = torch.ones(3, requires_grad=True)
config = make_config(require_grad=True)  # not a torch call
