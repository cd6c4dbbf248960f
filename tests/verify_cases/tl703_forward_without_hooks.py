# label: harmless
# rule: TL703
import torch
import torch.nn as nn
model = nn.Linear(2, 2)
x = torch.ones(1, 2)
out = model.forward(x)
print("HAZARD" if not torch.equal(out, model(x)) else "ok")
