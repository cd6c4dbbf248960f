"""Is a flagged expression self-contained (literals and torch/numpy calls only), so that
`--verify` may run it exactly as written? Names are rewritten to their qualified form
(`T.tensor` -> `torch.tensor`, `np.random.rand` -> `numpy.random.rand`)."""

from __future__ import annotations

import ast
from typing import Optional

from torchlint.analysis.imports import ImportTable

# Callables a snippet may call: constructors and pure functions. Nothing that reads or
# writes files, starts processes or downloads (numpy.loadtxt, torch.load, torch.hub...).
SAFE_CALLABLES = frozenset({
    *(f"torch.{n}" for n in (
        "tensor", "as_tensor", "from_numpy", "zeros", "ones", "empty", "full", "rand", "randn", "randint",
        "arange", "linspace", "eye", "softmax", "log_softmax", "Tensor", "FloatTensor", "DoubleTensor",
        "LongTensor", "IntTensor", "ByteTensor", "BoolTensor", "HalfTensor", "ShortTensor", "CharTensor")),
    *(f"torch.nn.functional.{n}" for n in ("softmax", "log_softmax", "softmin")),
    *(f"numpy.{n}" for n in ("zeros", "ones", "empty", "full", "linspace", "array", "asarray", "eye", "identity")),
    *(f"numpy.random.{n}" for n in ("rand", "randn", "random", "uniform", "normal", "random_sample",
                                    "standard_normal", "randint")),
})
SAFE_METHODS = frozenset({"float", "double", "half", "long", "int", "reshape", "view", "t"})
SAFE_ATTRIBUTES = frozenset({f"torch.{n}" for n in (
    "float", "float32", "float64", "double", "float16", "half", "bfloat16", "long", "int64", "int", "int32",
    "int16", "int8", "uint8", "bool")} | {"numpy.float32", "numpy.float64", "numpy.int64", "numpy.int32"})
_MAX_LENGTH = 300


class _Qualify(ast.NodeTransformer):
    def __init__(self, imports: ImportTable) -> None:
        self.imports = imports
        self.ok = True

    def _dotted(self, name: str) -> ast.AST:
        parts = name.split(".")
        node: ast.AST = ast.Name(parts[0], ast.Load())
        for part in parts[1:]:
            node = ast.Attribute(node, part, ast.Load())
        return node

    def generic_visit(self, node: ast.AST) -> ast.AST:
        if isinstance(node, ast.Call):
            name = self.imports.qualname(node.func)
            if name in SAFE_CALLABLES:
                node.func = self._dotted(name)  # type: ignore[assignment]
            elif isinstance(node.func, ast.Attribute) and node.func.attr in SAFE_METHODS \
                    and self.imports.qualname(node.func) is None:
                node.func.value = self.visit(node.func.value)
            else:
                self.ok = False
                return node
            node.args = [self.visit(a) for a in node.args]
            for kw in node.keywords:
                if kw.arg is None:
                    self.ok = False
                kw.value = self.visit(kw.value)
            return node
        if isinstance(node, (ast.Attribute, ast.Name)):
            name = self.imports.qualname(node)
            if name in SAFE_ATTRIBUTES:
                return self._dotted(name)
            self.ok = False
            return node
        if isinstance(node, (ast.Constant, ast.List, ast.Tuple, ast.UnaryOp, ast.BinOp, ast.USub, ast.UAdd,
                             ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow, ast.Load)):
            return super().generic_visit(node)
        self.ok = False
        return node


def snippet_of(node: ast.AST, imports: ImportTable) -> Optional[str]:
    if not isinstance(node, ast.Call):
        return None
    import copy
    qualify = _Qualify(imports)
    rewritten = qualify.visit(copy.deepcopy(node))
    if not qualify.ok:
        return None
    text = ast.unparse(rewritten)
    return text if len(text) <= _MAX_LENGTH else None
