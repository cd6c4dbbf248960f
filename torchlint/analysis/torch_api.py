"""Facts about the torch API that several rules share (qualified names only)."""

from __future__ import annotations

import ast

from torchlint.analysis.imports import QualNames

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional
    from torchlint.analysis.semantic import SemanticModel

TORCH_SAVE = QualNames({"torch.save"})  # two serialization rules ask each call
TORCH_LOG = QualNames({"torch.log"})
FLOAT_DTYPES = {
    "torch.float": "torch.float32", "torch.float32": "torch.float32",
    "torch.float64": "torch.float64", "torch.double": "torch.float64",
    "torch.float16": "torch.float16", "torch.half": "torch.float16",
    "torch.bfloat16": "torch.bfloat16",
}
FLOAT_TENSOR_TYPES = {
    "torch.FloatTensor": "torch.float32", "torch.DoubleTensor": "torch.float64",
    "torch.HalfTensor": "torch.float16", "torch.BFloat16Tensor": "torch.bfloat16",
    "torch.cuda.FloatTensor": "torch.float32", "torch.cuda.DoubleTensor": "torch.float64",
    "torch.cuda.HalfTensor": "torch.float16", "torch.cuda.BFloat16Tensor": "torch.bfloat16",
}
INT_DTYPES = {
    "torch.long", "torch.int64", "torch.int", "torch.int32", "torch.int16", "torch.short",
    "torch.int8", "torch.uint8", "torch.bool", "torch.uint16", "torch.uint32", "torch.uint64",
}
FLOAT_CAST_METHODS = {"float": "torch.float32", "double": "torch.float64",
                      "half": "torch.float16", "bfloat16": "torch.bfloat16"}

# nn.*Loss classes whose `reduction` defaults to 'mean'.
MEAN_REDUCTION_LOSSES = frozenset({
    "L1Loss", "MSELoss", "CrossEntropyLoss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss",
    "KLDivLoss", "HuberLoss", "SmoothL1Loss", "SoftMarginLoss", "MultiLabelSoftMarginLoss",
    "CTCLoss", "PoissonNLLLoss", "GaussianNLLLoss", "MarginRankingLoss",
    "HingeEmbeddingLoss", "CosineEmbeddingLoss", "MultiMarginLoss", "TripletMarginLoss",
    "MultiLabelMarginLoss", "TripletMarginWithDistanceLoss",
})
MEAN_REDUCTION_FUNCTIONS = frozenset({
    "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "soft_margin_loss",
    "multilabel_soft_margin_loss", "ctc_loss", "poisson_nll_loss", "gaussian_nll_loss",
    "margin_ranking_loss", "hinge_embedding_loss", "cosine_embedding_loss",
    "multi_margin_loss", "triplet_margin_loss", "multilabel_margin_loss",
})
CLASS_INDEX_LOSS_CLASSES = frozenset({"torch.nn.CrossEntropyLoss", "torch.nn.NLLLoss"})
CLASS_INDEX_LOSS_FUNCTIONS = frozenset({"torch.nn.functional.cross_entropy", "torch.nn.functional.nll_loss"})

RNG_CONSTRUCTORS = {
    "numpy.random.default_rng": "np.random.default_rng",
    "numpy.random.RandomState": "np.random.RandomState",
    "numpy.random.Generator": "np.random.Generator",
    "random.Random": "random.Random",
    "torch.Generator": "torch.Generator",
}

_TYPES = ("Tensor", "FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor",
          "IntTensor", "ShortTensor", "ByteTensor", "CharTensor", "BoolTensor")
LEGACY_CONSTRUCTORS = frozenset(
    [f"torch.{t}" for t in _TYPES] + [f"torch.cuda.{t}" for t in _TYPES if t != "Tensor"])

DATALOADER = "torch.utils.data.DataLoader"
DDP = "torch.nn.parallel.DistributedDataParallel"


def dtype_name(node: Optional[ast.AST], ctx: "SemanticModel") -> Optional[str]:
    """Canonical float dtype named by `node` (`torch.float`, `T.half`, "float32")."""
    if node is None:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        value = node.value if node.value.startswith("torch.") else "torch." + node.value
        return FLOAT_DTYPES.get(value) or FLOAT_TENSOR_TYPES.get(value)
    name = ctx.qualname(node)
    if name is None:
        return None
    return FLOAT_DTYPES.get(name) or FLOAT_TENSOR_TYPES.get(name)


def is_int_dtype(node: Optional[ast.AST], ctx: "SemanticModel") -> bool:
    if node is None:
        return False
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return ("torch." + node.value) in INT_DTYPES
    return ctx.qualname(node) in INT_DTYPES


def float_cast(node: ast.AST, ctx: "SemanticModel") -> Optional[str]:
    """The float dtype when `node` casts a tensor to floating point: `.float()`,
    `.to(torch.float16)`, `.to(dtype=...)`, `.type(torch.FloatTensor)`,
    `torch.tensor(x, dtype=torch.float32)`."""
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    if isinstance(func, ast.Attribute):
        if func.attr in FLOAT_CAST_METHODS and not node.args and not node.keywords:
            return FLOAT_CAST_METHODS[func.attr]
        if func.attr == "to":
            for candidate in [*node.args, *(k.value for k in node.keywords if k.arg == "dtype")]:
                found = dtype_name(candidate, ctx)
                if found:
                    return found
        if func.attr == "type" and len(node.args) == 1:
            return dtype_name(node.args[0], ctx)
    name = ctx.call_name(node)
    if name in ("torch.tensor", "torch.as_tensor"):
        for kw in node.keywords:
            if kw.arg == "dtype":
                return dtype_name(kw.value, ctx)
    return None


def receiver_chain(node: ast.AST) -> list[ast.AST]:
    """`a.b(c).d()` -> [the whole call, a.b(c), a]: the receivers the value flows through."""
    chain = []
    while True:
        chain.append(node)
        if isinstance(node, ast.Call):
            node = node.func.value if isinstance(node.func, ast.Attribute) else node.func
        elif isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        else:
            return chain


_DEVICE_STRINGS = ("cuda", "cpu", "mps", "xpu", "meta")


def conversion_target(arg: ast.AST, ctx: "SemanticModel", keyword_name: Optional[str] = None) -> Optional[str]:
    """'dtype' or 'device' for the argument of `.to(...)`; None when it cannot be told."""
    if keyword_name in ("dtype", "device"):
        return keyword_name
    if dtype_name(arg, ctx) or is_int_dtype(arg, ctx):
        return "dtype"
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value.split(":")[0] in _DEVICE_STRINGS:
        return "device"
    if ctx.call_name(arg) == "torch.device":
        return "device"
    # Variables named for what they hold: `device`, `x.device`, `default_dtype`, `self.dtype`.
    last = arg.id if isinstance(arg, ast.Name) else arg.attr if isinstance(arg, ast.Attribute) else ""
    last = last.lower()
    if "dtype" in last:
        return "dtype"
    if "device" in last or last in ("dev",):
        return "device"
    return None
