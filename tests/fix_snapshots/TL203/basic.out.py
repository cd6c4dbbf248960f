import torch

y = x.to("cuda", torch.float32)  # expect: TL203
y = x.to("cuda", torch.float16)  # expect: TL203
y = x.to(device, torch.float16)  # expect: TL203
y = x.to("cpu", torch.float64)  # expect: TL203
y = x.to("cuda:0", torch.float32)  # expect: TL203
y = x.to(dev, torch.int64)  # expect: TL203

# --- near misses: must stay silent -------------------------------------------
y = x.to(device, torch.float16)
y = x.float().contiguous()
y = x.cuda().contiguous()
y = x.float().long()  # two dtype changes: a different issue
y = x.to(something).to(other)  # unknown kinds
y = x.detach().cpu().numpy()
model = torch.nn.Linear(2, 2).float().cuda()  # a module, converted in place
y = x.long().to(self.dtype)  # two dtype changes
z = x.to(query.device, torch.float32)  # expect: TL203
w = torch.ones(4).float().to(device)  # torch.ones is float32 already: `.float()` is a no-op
feats = x.float()
moved = feats.float().cuda()  # feats is float32: one copy
net = (ckpt.get("ema") or ckpt["model"]).to(device).float()  # may be a module
