# label: harmful
# rule: TL703
import torch
import torch.nn as nn
model = nn.Linear(2, 2)
calls = []
model.register_forward_hook(lambda mod, inp, out: calls.append(1))
out = model.forward(torch.ones(1, 2))
print("HAZARD" if not calls else "ok")
