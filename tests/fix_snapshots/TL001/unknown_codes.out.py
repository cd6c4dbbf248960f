# The fixture harness enables only TL001, so the other rules' codes here are not judged
# (tests/test_fix.py covers unused codes of enabled rules). Codes no rule has are always unused.
import torch

x = torch.zeros(3)  # expect: TL001
y = torch.ones(3)  # noqa: E501  # expect: TL001
z = torch.ones(3)  # expect: TL001

# --- near misses: must stay silent -------------------------------------------
a = torch.zeros(3)  # noqa
b = torch.zeros(3)  # noqa: E501, B008
c = torch.zeros(3)  # noqa: TL101
d = "# noqa: TL998"
e = torch.zeros(3)  # noqa: TL001
# torchlint: noqa: TL205
