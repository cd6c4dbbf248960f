import torch

a = torch.zeros(3, 4, device=device)  # expect: TL801
b = torch.randn(8, device="cuda")  # expect: TL801
c = torch.arange(10).to("cuda", non_blocking=True)  # expect: TL801
d = torch.tensor([1.0, 2.0], device=x.device)  # expect: TL801
e = torch.ones(((2, 3)), device=x.device)  # expect: TL801
f = torch.ones((2, 3), device="cuda",)  # expect: TL801

# --- near misses: must stay silent -------------------------------------------
ok1 = torch.zeros(3, 4, device=device)
ok2 = torch.zeros(3).to(torch.float16)  # a dtype change only
ok3 = torch.zeros(3).to(dtype=torch.long)
ok4 = torch.from_numpy(arr).to(device)  # from_numpy cannot take device=
ok5 = x.to(device)
ok6 = torch.arange(4, dtype=torch.int64).to(default_dtype)  # a dtype held in a variable
ok7 = torch.zeros(3).to(something)  # not known to be a device
host = torch.zeros(3).to("cpu")  # already on the CPU: .to returns the tensor itself, no copy
