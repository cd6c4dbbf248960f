"""TL601 and the project's own checkpoints, statically: what the project's `torch.save` calls
store (the saved expression's shape), for the file a `torch.load` reads. The worker then
saves an object of that shape and loads it as the flagged call does, under the installed
torch (the observer beside the rule), so the verdict is about this project's checkpoints,
not about a state_dict in general.

Shapes: "state_dict" (tensors, numbers and strings in containers: `model.state_dict()`,
`{"model": m.state_dict(), "epoch": e}`, `vars(args)`), "namespace" (an `argparse.Namespace`
inside: `{"args": args}`), "module" (a whole model: `torch.save(model, path)`)."""

from __future__ import annotations

import ast
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterable, Optional

_RANK = {"state_dict": 0, "namespace": 1, "module": 2}
_CONFIG_NAMES = frozenset({"args", "opt", "opts", "config", "cfg", "hparams", "hp", "options", "flags"})
# Calls whose value is tensors and plain values (a state_dict, a tensor, a plain dict).
_PLAIN_CALLS = frozenset({"state_dict", "vars", "item", "tolist", "dict", "tensor", "ones", "zeros", "randn", "rand",
                          "arange", "empty", "full", "stack", "cat", "from_numpy"})
_MODEL_NAMES = frozenset({"model", "net", "network", "module", "encoder", "decoder", "generator",
                          "discriminator", "policy", "agent"})


def _bindings(tree: ast.Module) -> dict[str, list[ast.expr]]:
    out: dict[str, list[ast.expr]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    out.setdefault(target.id, []).append(node.value)
    return out


def _called(node: ast.expr) -> str:
    if isinstance(node, ast.Call):
        func = node.func
        return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return ""


def shape_of(node: ast.expr, bound: dict[str, list[ast.expr]], depth: int = 0) -> Optional[str]:
    """The shape of what `node` evaluates to, or None when the code does not say."""
    if depth > 4:
        return None
    called = _called(node)
    if called in _PLAIN_CALLS or isinstance(node, ast.Constant):
        return "state_dict"
    if called in ("parse_args", "parse_known_args", "Namespace"):
        return "namespace"
    if isinstance(node, (ast.Dict, ast.List, ast.Tuple)):
        values = node.values if isinstance(node, ast.Dict) else node.elts
        shapes = [shape_of(v, bound, depth + 1) for v in values if v is not None]
        known = [s for s in shapes if s is not None]
        return max(known, key=_RANK.__getitem__) if known else None
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    if isinstance(node, ast.Name) and len(bound.get(name, [])) == 1:
        found = shape_of(bound[name][0], bound, depth + 1)
        if found is not None:
            return found
    if name in _CONFIG_NAMES:
        return "namespace"
    if name in _MODEL_NAMES:
        return "module"
    return None


def _literal_path(node: Optional[ast.expr]) -> str:
    """The file name a path expression names; `=name` for a plain variable (an in-memory
    buffer or a path held in a name: it matches a save through the same name); else ""."""
    if isinstance(node, ast.Name):
        return f"={node.id}"
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return os.path.basename(node.value)
    if isinstance(node, ast.JoinedStr):  # f"{out}/best.pt": the constant tail names the file
        tail = node.values[-1] if node.values else None
        if isinstance(tail, ast.Constant) and isinstance(tail.value, str):
            return os.path.basename(tail.value)
    return ""


def saves(tree: ast.Module) -> list[tuple[int, str, str]]:
    """(line, shape, file name or "") of each `torch.save(obj, path)` whose shape is known."""
    bound = _bindings(tree)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "save" \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "torch" and node.args:
            shape = shape_of(node.args[0], bound)
            if shape is not None:
                path = node.args[1] if len(node.args) > 1 else next(
                    (k.value for k in node.keywords if k.arg == "f"), None)
                out.append((node.lineno, shape, _literal_path(path)))
    return out


def loaded_name(call: ast.Call) -> str:
    return _literal_path(call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "f"), None))


def checkpoint_shape(load: ast.Call, trees: Iterable[tuple[str, ast.Module]]) -> Optional[tuple[str, str]]:
    """(shape, `file:line` of the save) for the file `load` reads: the saves of the same file
    name, else (a path the code computes) every save of the project; the riskiest shape when
    they differ. None when the project saves nothing of a known shape."""
    name = loaded_name(load)
    found = [(shape, f"{rel}:{line}", saved) for rel, tree in trees for line, shape, saved in saves(tree)]
    same = [f for f in found if name and f[2] == name]
    if not same and name.startswith("="):
        name = ""  # a variable no save writes through: the path is computed
    named = [f for f in found if f[2] and not f[2].startswith("=")]
    pool = same or (found if not name or not named else [])
    if not pool:
        return None
    shape, where, _ = max(pool, key=lambda f: _RANK[f[0]])
    return shape, where
