import torchvision
from torchvision import models

net = models.resnet50(weights="DEFAULT")  # expect: TL902
net = torchvision.models.resnet18(weights=None)  # expect: TL902
det = torchvision.models.detection.fasterrcnn_resnet50_fpn(weights_backbone=None)  # expect: TL902
net = models.vgg16(pretrained=args.pretrained)  # expect: TL902

# --- near misses: must stay silent -------------------------------------------
net = models.resnet50(weights=models.ResNet50_Weights.DEFAULT)
net = models.resnet50(weights=None)
net = timm.create_model("resnet50", pretrained=True)  # timm keeps `pretrained=`
net = MyNet(pretrained=True)
