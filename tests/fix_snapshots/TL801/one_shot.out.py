import torch as T


def step(x, device):
    noise = T.randn_like(x, device=device)  # expect: TL801
    mask = T.ones(4, device="cuda")  # expect: TL801
    return x + noise * mask


# --- near misses: must stay silent -------------------------------------------
def warmup(model, device):
    for _ in range(3):
        model(T.zeros(1, 3, 224, 224).to(device))  # runs once before timing: a copy is noise


def run_benchmark(model, device, warmup_iters):
    for _ in range(warmup_iters):
        model(T.zeros(8).to(device))


if __name__ == "__main__":
    demo_input = T.randn(2, 3).cuda()  # a one-off demo
    print(step(demo_input, "cuda"))
