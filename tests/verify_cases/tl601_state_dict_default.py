# label: harmless
# rule: TL601
import torch
import torch.nn as nn
import torch.nn.functional as F
import io
buf = io.BytesIO()
torch.save(nn.Linear(2, 2).state_dict(), buf)
buf.seek(0)
state = torch.load(buf)
