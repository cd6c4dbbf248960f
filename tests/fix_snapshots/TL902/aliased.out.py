import torchvision.models as tvm
from torchvision.models import resnet34 as backbone

a = tvm.mobilenet_v2(weights="DEFAULT")  # expect: TL902
b = backbone(weights="DEFAULT", progress=False)  # expect: TL902

# --- near misses: must stay silent -------------------------------------------
c = tvm.mobilenet_v2(weights="DEFAULT")
d = load_backbone(pretrained=True)
