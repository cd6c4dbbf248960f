"""The one table of framework base classes that are nn.Modules: a class deriving from one
of them is a Module to every rule (TL206, TL402, TL701, TL702 ...). Extend it per project
with the top-level config key `module-bases = ["mypkg.layers.Base"]`."""

from __future__ import annotations

# Qualified names as imports resolve them (`import pytorch_lightning as pl` ->
# `pytorch_lightning.LightningModule`).
FRAMEWORK_MODULE_BASES = frozenset({
    # Lightning
    "pytorch_lightning.LightningModule", "pytorch_lightning.core.LightningModule",
    "pytorch_lightning.core.module.LightningModule", "pytorch_lightning.core.lightning.LightningModule",
    "lightning.LightningModule", "lightning.pytorch.LightningModule",
    "lightning.pytorch.core.LightningModule", "lightning.pytorch.core.module.LightningModule",
    # Hugging Face transformers
    "transformers.PreTrainedModel", "transformers.modeling_utils.PreTrainedModel",
    # diffusers
    "diffusers.ModelMixin", "diffusers.models.ModelMixin", "diffusers.models.modeling_utils.ModelMixin",
})
# Packages whose capitalised model classes are nn.Modules (`torchvision.models.ResNet`,
# `timm.models.vision_transformer.VisionTransformer`).
_MODEL_PACKAGES = ("torchvision.models.", "timm.models.", "timm.layers.")


def is_framework_module(qualname: str, extra: frozenset[str] = frozenset()) -> bool:
    if qualname in FRAMEWORK_MODULE_BASES or qualname in extra:
        return True
    if qualname.startswith(_MODEL_PACKAGES):
        last = qualname.rsplit(".", 1)[1]
        return last[:1].isupper() and not last.endswith(("Weights", "Config", "Enum"))
    if qualname.startswith("transformers."):
        return qualname.endswith("PreTrainedModel")  # `LlamaPreTrainedModel`, ...
    return False


# Functions that return a model (`torchvision.models.resnet18()`, `timm.create_model(...)`);
# torchvision's lower-case names are its model builders, except these helpers.
_NOT_BUILDERS = frozenset({"get_model_weights", "get_weight", "list_models", "get_model_builder"})
_FACTORIES = frozenset({"timm.create_model", "timm.models.create_model", "torchvision.models.get_model"})


def is_framework_factory(qualname: str) -> bool:
    if qualname in _FACTORIES:
        return True
    if qualname.startswith("torchvision.models."):
        parts = qualname.split(".")
        last = parts[-1]
        return last[:1].islower() and last not in _NOT_BUILDERS and not last.startswith("load") \
            and len(parts) <= 4 and not any(p.startswith("_") or p == "utils" for p in parts[2:])
    return False
