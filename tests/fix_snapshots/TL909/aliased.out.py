import torch.nn.functional as Fn

l = Fn.cross_entropy(logits, labels)
running += l.item()  # expect: TL909
m = Fn.mse_loss(a, b)
m.item()  # expect: TL909

# --- near misses: must stay silent -------------------------------------------
m.data[1:]
v = values.data[0]
