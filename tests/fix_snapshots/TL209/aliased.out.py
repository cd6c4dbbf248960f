import torch
import torch as T
from torch import FloatTensor, LongTensor as Longs

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def train_step(model, batch, labels):
    x = batch.to(device)
    y = labels.cuda()
    x = x.float()  # expect: TL209
    y = y.long()  # expect: TL209
    return model(x), y


def features(images):
    imgs = images.to("cuda:0", non_blocking=True)
    gray = imgs.float().double()  # expect: TL209
    masks = torch.zeros(4, 4, device=device).float()  # expect: TL209
    return gray, masks


def to_half(x):
    x = x.cuda().contiguous()
    return x.half()  # expect: TL209


# --- near misses: must stay silent -------------------------------------------
def ok_cpu(x):
    x = x.to("cpu")
    return x.type(torch.FloatTensor)  # already on the CPU


def ok_unknown(x):
    return x.type(torch.FloatTensor)  # device unknown


def ok_cuda_type(x):
    x = x.cuda()
    return x.type(torch.cuda.FloatTensor)  # a CUDA type keeps it on the GPU


def ok_round_trip(x):
    x = x.cuda()
    return x.type(torch.FloatTensor).cuda()  # moved straight back


def ok_dtype(x):
    x = x.to(device)
    return x.type(torch.float32)  # a dtype, not a type class: keeps the device


def ok_query(x):
    x = x.cuda()
    return x.type()  # returns the type's name


def ok_factory_cpu():
    return torch.zeros(3, device="cpu").type(torch.LongTensor)


def ok_rebound(x):
    x = x.cuda()
    x = x.cpu()
    return x.type(torch.FloatTensor)


def ok_dtype_to(x):
    x = x.to(torch.float16)  # a dtype conversion: device unknown
    return x.type(torch.FloatTensor)


def ok_other_branch(x, use_gpu):
    if use_gpu:
        x = x.cuda()
    else:
        x = x.type(torch.FloatTensor)  # on the CPU in this branch
    return x
