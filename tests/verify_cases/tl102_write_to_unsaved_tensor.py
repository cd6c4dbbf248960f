# label: harmless
# rule: TL102
import torch
w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
loss = (w * 3.0).sum()
w.data.mul_(10.0)
loss.backward()
print("HAZARD" if w.grad.tolist() != [3.0, 3.0, 3.0] else "ok")
