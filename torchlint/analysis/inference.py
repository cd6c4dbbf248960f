"""Is this name a tensor, a parameter or an nn.Module? Local, conservative inference:
`None` means "don't know", and rules stay silent on it."""

from __future__ import annotations

import ast
from bisect import bisect_left

from torchlint.analysis.imports import is_module_class_name

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional, Union
    from torchlint.analysis.scopes import Binding
    from torchlint.analysis.semantic import SemanticModel

TENSOR = "tensor"
PARAMETER = "parameter"  # a tensor that is an nn.Parameter (a leaf requiring grad)
MODULE = "module"

# torch.* callables that return a tensor.
TENSOR_FACTORIES = frozenset({
    "tensor", "as_tensor", "from_numpy", "zeros", "ones", "empty", "full", "rand", "randn",
    "randint", "randperm", "arange", "linspace", "logspace", "eye", "zeros_like", "ones_like",
    "empty_like", "full_like", "rand_like", "randn_like", "randint_like", "normal", "bernoulli",
    "multinomial", "empty_strided", "frombuffer", "complex", "polar", "tril_indices",
    "triu_indices", "Tensor", "FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor",
    "LongTensor", "IntTensor", "ShortTensor", "ByteTensor", "CharTensor", "BoolTensor",
})
# Methods that return a tensor when called on a tensor.
TENSOR_METHODS = frozenset({
    "float", "double", "half", "bfloat16", "long", "int", "short", "bool", "byte", "char",
    "to", "cuda", "cpu", "contiguous", "detach", "clone", "view", "reshape", "permute",
    "transpose", "squeeze", "unsqueeze", "flatten", "expand", "repeat", "sum", "mean",
    "type", "pin_memory", "abs", "exp", "log", "sqrt", "pow", "matmul", "mm", "bmm", "t",
    "softmax", "log_softmax", "sigmoid", "relu", "tanh", "clamp", "masked_fill", "argmax",
    "max", "min", "std", "var", "norm", "mul", "add", "sub", "div", "requires_grad_",
    "gather", "index_select", "masked_select", "narrow", "select", "neg", "log1p", "expm1",
})
_NON_TENSOR_TORCH_NAMESPACES = ("torch.nn.", "torch.optim", "torch.utils", "torch.distributed",
                                "torch.cuda", "torch.backends", "torch.jit", "torch.hub",
                                "torch.onnx", "torch.autograd", "torch.amp", "torch.multiprocessing",
                                "torch.profiler", "torch.compile", "torch.export", "torch.fx",
                                "torch.testing", "torch.device", "torch.dtype", "torch.Size",
                                "torch.Generator", "torch.load", "torch.save", "torch.manual_seed",
                                "torch.set_", "torch.get_", "torch.is_", "torch.no_grad",
                                "torch.enable_grad", "torch.inference_mode", "torch.autocast",
                                "torch.library", "torch.ops", "torch.func", "torch.distributions")
_MODULE_ANNOTATIONS = frozenset({"torch.nn.Module"})
# Containers whose iteration yields their submodules (a ModuleDict yields keys).
MODULE_SEQUENCES = frozenset({"torch.nn.ModuleList", "torch.nn.Sequential"})
_TENSOR_ANNOTATIONS = frozenset({"torch.Tensor", "torch.FloatTensor", "torch.LongTensor"})
_PARAM_ANNOTATIONS = frozenset({"torch.nn.Parameter"})
_PARAM_ITERATORS = frozenset({"parameters", "named_parameters", "buffers", "named_buffers"})


def _loader_like(expr: ast.AST, ctx: "SemanticModel") -> bool:
    if isinstance(expr, ast.Call) and ctx.call_name(expr) == "torch.utils.data.DataLoader":
        return True
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id in ("enumerate", "tqdm") and expr.args:
        return _loader_like(expr.args[0], ctx)
    name = expr.id if isinstance(expr, ast.Name) else expr.attr if isinstance(expr, ast.Attribute) else ""
    return "loader" in name.lower()


def _default_collate(loader: ast.AST, lineno: int, ctx: "SemanticModel") -> bool:
    """Is `loader` a DataLoader built here without `collate_fn` (so a batch is a tensor)?"""
    if isinstance(loader, ast.Call) and isinstance(loader.func, ast.Name) and loader.func.id in ("enumerate", "tqdm") \
            and loader.args:
        loader = loader.args[0]
    if isinstance(loader, ast.Name):
        loader = ctx.value_before(loader, lineno, module_fallback=True)  # type: ignore[assignment]
    if not isinstance(loader, ast.Call) or ctx.call_name(loader) != "torch.utils.data.DataLoader":
        return False
    return not any(k.arg is None or k.arg == "collate_fn" for k in loader.keywords) \
        and len(loader.args) < 9  # collate_fn is the 9th positional parameter


def iterates_parameters(expr: ast.AST) -> Optional[str]:
    """'parameters' / 'named_parameters' when `expr` is `<x>.parameters()` (possibly
    wrapped in list()/enumerate())."""
    if isinstance(expr, ast.Call):
        f = expr.func
        if isinstance(f, ast.Attribute) and f.attr in _PARAM_ITERATORS:
            return f.attr
        if isinstance(f, ast.Name) and f.id in ("list", "tuple") and expr.args:
            return iterates_parameters(expr.args[0])
    return None


def kind_of_annotation(annotation: Optional[ast.AST], ctx: "SemanticModel") -> Optional[str]:
    if annotation is None:
        return None
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return None
    name = ctx.qualname(annotation)
    if name in _PARAM_ANNOTATIONS:
        return PARAMETER
    if name in _TENSOR_ANNOTATIONS:
        return TENSOR
    if name in _MODULE_ANNOTATIONS or (isinstance(annotation, ast.Name) and ctx.is_module_class_name(annotation.id)):
        return MODULE
    return None


def kind_of(expr: ast.AST, ctx: "SemanticModel", depth: int = 0) -> Optional[str]:
    """TENSOR, PARAMETER, MODULE or None (unknown) for an expression in the current scope."""
    if depth > 6:
        return None
    if isinstance(expr, ast.Call):
        return _call_kind(expr, ctx, depth)
    if isinstance(expr, ast.Attribute):
        return _attribute_kind(expr, ctx, depth)
    if isinstance(expr, ast.Name):
        if expr.id == "self" and ctx.enclosing_module_class() is not None:
            return MODULE
        return name_kind(expr.id, getattr(expr, "lineno", 10**9), ctx, depth)
    return None


def _call_kind(expr: ast.Call, ctx: "SemanticModel", depth: int) -> Optional[str]:
    """What a call returns: a known torch API's kind, a module (its class called), a module's
    output (a tensor), or what a tensor's or module's method gives back."""
    name = ctx.call_name(expr)
    if name is not None:
        kind = kind_of_qualname(name)
        # A class of another project file deriving from nn.Module, a torchvision/timm
        # factory, an imported `build_model()` that returns one.
        return MODULE if kind is None and ctx.builds_module(expr) else kind
    func = expr.func
    if isinstance(func, ast.Name) and ctx.is_module_class_name(func.id):
        return MODULE
    if isinstance(func, ast.Name) and ctx.builds_module(expr):  # a relatively imported class, a factory
        return MODULE
    if isinstance(func, (ast.Name, ast.Attribute)) and kind_of(func, ctx, depth + 1) == MODULE:
        return TENSOR  # calling a module runs its forward: `dist = model(x)`
    if isinstance(func, ast.Attribute):
        base = kind_of(func.value, ctx, depth + 1)
        if base in (TENSOR, PARAMETER) and func.attr in TENSOR_METHODS:
            return TENSOR
        if base == MODULE and func.attr in ("to", "cuda", "cpu", "float", "half", "double", "train", "eval"):
            return MODULE
    return None


def _attribute_kind(expr: ast.Attribute, ctx: "SemanticModel", depth: int) -> Optional[str]:
    if expr.attr in ("weight", "bias"):
        return PARAMETER
    if expr.attr == "grad":
        return TENSOR
    if expr.attr == "data" and kind_of(expr.value, ctx, depth + 1) in (TENSOR, PARAMETER):
        return TENSOR
    if isinstance(expr.value, ast.Name) and expr.value.id == "self":
        return self_attribute_kind(expr.attr, ctx)
    return None


def self_attribute_kind(attr: str, ctx: "SemanticModel") -> Optional[str]:
    """Kind of `self.<attr>` from the one `self.<attr> = <call>` of the enclosing class."""
    if not ctx.classes:
        return None
    key = ("self-kind", id(ctx.classes[-1]), attr)
    if key in ctx.memo:
        return ctx.memo[key]  # type: ignore[return-value]
    ctx.memo[key] = None  # `self.a = self.a.float()` asks about itself
    ctx.memo[_BUSY] = ctx.memo.get(_BUSY, 0) + 1  # type: ignore[operator]
    try:
        value = ctx.self_attribute_value(attr)
        kind = kind_of(value, ctx, 3) if isinstance(value, ast.Call) else None
        if value is None and ctx.self_attribute_constructor(attr) is not None:
            kind = kind_of_qualname(ctx.self_attribute_constructor(attr))  # several agreeing assignments
    finally:
        ctx.memo[_BUSY] = ctx.memo[_BUSY] - 1  # type: ignore[operator]
    ctx.memo[key] = kind
    return kind


def kind_of_qualname(name: Optional[str]) -> Optional[str]:
    """The kind of what calling the torch callable `name` returns, when known."""
    if name is None:
        return None
    if name == "torch.nn.Parameter":
        return PARAMETER
    if is_module_class_name(name):
        return MODULE
    if name.startswith("torch.") and not name.startswith(_NON_TENSOR_TORCH_NAMESPACES):
        last = name.rsplit(".", 1)[1]
        if name.count(".") == 1 and (last in TENSOR_FACTORIES or last[:1].islower()):
            return TENSOR
    if name.startswith("torch.nn.functional."):
        return TENSOR
    return None


_KIND_PRESERVING = frozenset({"to", "cuda", "cpu", "float", "half", "double", "bfloat16", "train", "eval"})


def _same_kind_update(b: "Binding") -> bool:
    """`model = model.cuda()`, `x = x.to(device)`: the name keeps the kind its other bindings give."""
    value = b.value
    return isinstance(b.node, ast.Assign) and b.index is None and isinstance(value, ast.Call) \
        and isinstance(value.func, ast.Attribute) and value.func.attr in _KIND_PRESERVING \
        and isinstance(value.func.value, ast.Name) and value.func.value.id == b.name


def name_kind(name: str, lineno: int, ctx: "SemanticModel", depth: int = 0) -> Optional[str]:
    """tensor / parameter / module / None for a local name (bindings above `lineno`) or a
    module-level one; None when its bindings disagree."""
    kinds: "frozenset[Optional[str]] | set[Optional[str]]"
    if ctx.memo.get(_BUSY):  # inside a self-attribute inference: answers there are provisional
        kinds = {binding_kind(b, ctx, depth) for b in ctx.bindings_reaching(name, lineno) if not _same_kind_update(b)}
    else:
        kinds = _ReachingKinds.of(name, ctx, depth).at(lineno)
    if len(kinds) == 1:
        return next(iter(kinds))
    if kinds == {TENSOR, PARAMETER}:
        return TENSOR
    return None


_BUSY = ("inference-busy",)
_ASSIGNS = (ast.Assign, ast.AugAssign, ast.AnnAssign)


class _ReachingKinds:
    """The kinds that the bindings of one name reaching each line give it, as
    `SemanticModel.bindings_reaching` defines "reaching", for one position of the walk (scope
    and class) and inference depth. The bindings above a line are a prefix of the bindings in
    line order, so each binding's kind is computed once, not once per read of the name: a
    name bound and read thousands of times in one function stays linear."""

    def __init__(self, name: str, ctx: "SemanticModel", depth: int) -> None:
        self.name, self.ctx, self.depth = name, ctx, depth
        self.info = ctx.scope_info()
        bindings = sorted(enumerate(self.info.assignments.get(name)), key=lambda t: (t[1].lineno, t[0]))
        self.sorted = [b for _, b in bindings]
        self.lines = [b.lineno for b in self.sorted]
        self.same_line: dict[int, list["Binding"]] = {}  # bindings that reach their own line
        for _, b in sorted((i, b) for i, b in bindings):
            if not isinstance(b.node, _ASSIGNS):
                self.same_line.setdefault(b.lineno, []).append(b)
        self.prefix: list[frozenset[Optional[str]]] = [frozenset()]  # kinds of the first k bindings
        self.on_line: dict[int, frozenset[Optional[str]]] = {}
        self.module: Optional[frozenset[Optional[str]]] = None

    @classmethod
    def of(cls, name: str, ctx: "SemanticModel", depth: int) -> "_ReachingKinds":
        key = ("reaching-kinds", id(ctx.scope), id(ctx.classes[-1]) if ctx.classes else 0, name, depth)
        found = ctx.memo.get(key)
        if found is None:
            found = ctx.memo[key] = cls(name, ctx, depth)
        return found  # type: ignore[return-value]

    def _kinds(self, bindings: "list[Binding]") -> frozenset[Optional[str]]:
        return frozenset(binding_kind(b, self.ctx, self.depth) for b in bindings if not _same_kind_update(b))

    def at(self, lineno: int) -> frozenset[Optional[str]]:
        above = bisect_left(self.lines, lineno)
        same = self.same_line.get(lineno)
        if not above and not same and self.info is not self.ctx.module_scope and not self.info.binds(self.name):
            if self.module is None:  # not local here: every binding of the module-level name
                self.module = self._kinds(self.ctx.module_scope.assignments.get(self.name))
            return self.module
        prefix = self.prefix
        while len(prefix) <= above:
            b = self.sorted[len(prefix) - 1]
            prefix.append(prefix[-1] if _same_kind_update(b) else prefix[-1] | {binding_kind(b, self.ctx, self.depth)})
        kinds = prefix[above]
        if same:
            extra = self.on_line.get(lineno)
            if extra is None:
                extra = self.on_line[lineno] = self._kinds(same)
            kinds = kinds | extra
        return kinds


def binding_kind(b: "Binding", ctx: "SemanticModel", depth: int = 0) -> Optional[str]:
    """The kind a binding gives its name: from an annotation, a loop's iterable, or the value."""
    node = b.node
    if isinstance(node, ast.arg):
        return kind_of_annotation(b.annotation, ctx)
    if isinstance(node, (ast.For, ast.AsyncFor)):
        return _loop_target_kind(b, node, ctx)
    if b.annotation is not None:
        kind = kind_of_annotation(b.annotation, ctx)
        if kind is not None:
            return kind
    if b.value is not None and b.index is None and isinstance(node, (ast.Assign, ast.AnnAssign)):
        return kind_of(b.value, ctx, depth + 1)
    return None


# What one item of `model.<method>()` is, by its position in the item (None: the item itself).
_ITERATED_KINDS = {("parameters", None): PARAMETER, ("named_parameters", 1): PARAMETER,
                   ("buffers", None): TENSOR, ("named_buffers", 1): TENSOR}


def _loop_target_kind(b: "Binding", node: Union[ast.For, ast.AsyncFor], ctx: "SemanticModel") -> Optional[str]:
    """The kind of a name a for loop binds, from what the loop iterates over (through
    `enumerate` and `zip`)."""
    it: ast.AST = node.iter
    index = b.index  # position in what one iteration yields
    counted = _builtin_call(it, "enumerate")
    if counted is not None and counted.args:
        if index != 1:
            return None  # the counter, or the (counter, item) pair
        it, index = counted.args[0], None
    if isinstance(it, ast.Attribute) and isinstance(it.value, ast.Name) and it.value.id == "self" \
            and index is None and ctx.self_attribute_constructor(it.attr) in MODULE_SEQUENCES:
        return MODULE
    zipped = _builtin_call(it, "zip")
    if zipped is not None and index is not None and index < len(zipped.args) \
            and not isinstance(zipped.args[index], ast.Starred):
        it, index = zipped.args[index], None  # `for p, q in zip(a.parameters(), b.parameters())`
    which = iterates_parameters(it)
    if which is not None and (which, index) in _ITERATED_KINDS:
        return _ITERATED_KINDS[(which, index)]
    if isinstance(it, ast.Subscript) and isinstance(it.slice, ast.Constant) and it.slice.value == "params" \
            and index is None:
        return PARAMETER  # `for p in group["params"]`: an optimizer's parameter group
    if which is None and _loader_like(it, ctx):
        # A whole batch is a tensor only under the default collate; a custom `collate_fn`
        # may return a dict or a transformers BatchEncoding (whose `.to()` is in place).
        if index is None and not _default_collate(it, b.lineno, ctx):
            return None
        return TENSOR
    return None


def _builtin_call(node: ast.AST, name: str) -> Optional[ast.Call]:
    """`node` when it is a call of the plain name `name` (`enumerate(...)`), else None."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name:
        return node
    return None
