# label: harmless
# rule: TL203
import torch
x = torch.arange(6)
y = x.float().to("cpu")
print("HAZARD" if y.dtype != torch.float32 else "ok")
