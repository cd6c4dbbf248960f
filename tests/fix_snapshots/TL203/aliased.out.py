import torch as T

z = w.to(T.device("cuda"), T.bfloat16)  # expect: TL203
