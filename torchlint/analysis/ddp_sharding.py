"""Is a DataLoader's data split between DDP ranks? What a loop iterates (resolved back to its
`DataLoader(...)` calls), what kind of dataset a loader reads (only kinds torchlint can read:
project classes, torchvision/torchaudio datasets, TensorDataset, lists, Hugging Face
`load_dataset`), and whether anything in sight names the rank or a shard. Answers that cannot
be read are None, so a rule built on them stays silent where it cannot see (TL308)."""

from __future__ import annotations

import ast

from torchlint.analysis.astutil import arg_or_keyword, keyword, literal
from torchlint.analysis.nodes import iter_children
from torchlint.analysis.project_index import ModuleInfo
from torchlint.analysis.scopes import FUNCTION_TYPES, iter_scope
from torchlint.analysis.semantic import SemanticModel
from torchlint.analysis.torch_api import DATALOADER, DDP
from torchlint.fast_dataclass import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable, Optional, Union
    _Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]
    _Resolve = Callable[[ast.AST], Optional[str]]

MAX_DEPTH = 4

# Words whose mention means the data may be split by rank (or that the class handles workers
# or processes itself): the rank, the world size, replicas, shards, nodes, partitions.
_SHARD_WORDS = ("rank", "world", "replica", "shard", "split_dataset_by_node", "split_by_node", "process_index",
                "num_processes", "partition", "worker_info", "distributed", "num_nodes", "node_id")
_MAP_STYLE = frozenset({"torch.utils.data.Dataset", "torch.utils.data.dataset.Dataset"})
_ITERABLE = frozenset({"torch.utils.data.IterableDataset", "torch.utils.data.dataset.IterableDataset"})
_MAP_PACKAGES = ("torchvision.datasets.", "torchaudio.datasets.")
_TENSOR_DATASETS = frozenset({"torch.utils.data.TensorDataset", "torch.utils.data.dataset.TensorDataset"})
_SUBSETS = frozenset({"torch.utils.data.Subset", "torch.utils.data.dataset.Subset"})
_CONCATS = frozenset({"torch.utils.data.ConcatDataset", "torch.utils.data.dataset.ConcatDataset"})
_LIBRARIES = frozenset({"torch", "torchvision", "torchaudio", "datasets"})
_HF_LOAD = frozenset({"datasets.load_dataset", "datasets.load_from_disk"})
# Hugging Face Dataset methods that return another map-style Dataset (not `shard`).
_HF_METHODS = frozenset({"map", "filter", "shuffle", "with_format", "set_format", "select", "remove_columns",
                         "rename_column", "rename_columns", "cast_column", "flatten", "sort"})


@dataclass(frozen=True)
class DatasetKind:
    name: str  # what the loader reads: `NoisyTokens`, `CIFAR10`, `a list`
    iterable: bool = False
    random: bool = False  # tensors drawn at random when it is built (synthetic data)


@dataclass(frozen=True)
class Loader:
    kind: DatasetKind
    shuffle: bool  # `shuffle=` given and not literally False
    batch_size: int  # 0: not a literal
    seeded: bool  # a seed set alike on every rank where the loader is built (or at module level)


_GENERATORS = frozenset({"randn", "rand", "randint", "randperm", "normal", "uniform", "standard_normal",
                         "random", "integers"})
_SEEDERS = frozenset({"manual_seed", "seed_everything", "set_seed", "seed_all", "seed"})


def mentions_sharding(node: ast.AST) -> bool:
    """Does any name, attribute, argument or string under `node` name the rank, the world size,
    replicas, shards, partitions or worker info?"""
    for sub in ast.walk(node):
        word = sub.id if isinstance(sub, ast.Name) else sub.attr if isinstance(sub, ast.Attribute) \
            else sub.arg if isinstance(sub, (ast.arg, ast.keyword)) else \
            sub.value if isinstance(sub, ast.Constant) and isinstance(sub.value, str) else None
        if word and any(w in word.lower() for w in _SHARD_WORDS):
            return True
    return False


def seeded_alike(scope: ast.AST, model: SemanticModel) -> bool:
    """Does `scope`'s own code seed the RNGs with a value that does not name the rank
    (`torch.manual_seed(0)`, `seed_everything(args.seed)`; not `manual_seed(seed + rank)`)?"""
    body = scope.body if isinstance(scope.body, list) else []  # type: ignore[attr-defined]
    return any(isinstance(n, ast.Call) and isinstance(n.func, (ast.Name, ast.Attribute))
               and (n.func.id if isinstance(n.func, ast.Name) else n.func.attr) in _SEEDERS
               and not any(mentions_sharding(a) for a in n.args) for n in iter_scope(body))


def _built_here(expr: ast.AST, scope: ast.AST, model: SemanticModel) -> bool:
    """Is `expr` a call, or a name every binding of which (in `scope`) is a call?"""
    if isinstance(expr, ast.Name):
        values = _plain_values(expr.id, scope, model)
        return values is not None and all(isinstance(v, ast.Call) for v in values)
    return isinstance(expr, ast.Call)


def draws_random(expr: ast.AST, scope: ast.AST, model: SemanticModel, depth: int = 0) -> bool:
    """Is `expr` (in `scope`) drawn from a random generator (`torch.randn(...)`), directly or
    through the names it reads?"""
    for sub in ast.walk(expr):
        if isinstance(sub, ast.Call) and isinstance(sub.func, (ast.Name, ast.Attribute)) \
                and (sub.func.id if isinstance(sub.func, ast.Name) else sub.func.attr) in _GENERATORS:
            return True
        if isinstance(sub, ast.Name) and depth < 2:
            values = _plain_values(sub.id, scope, model) or []
            if any(draws_random(v, scope, model, depth + 1) for v in values):
                return True
    return False


def wraps_ddp(fn: _Function, call_name: _Resolve) -> bool:
    """Does `fn` (of the file `call_name` resolves names in) call `DistributedDataParallel(...)`?"""
    return any(isinstance(n, ast.Call) and call_name(n) == DDP for n in iter_scope(fn.body))


def loop_shards_batches(loop: ast.For) -> bool:
    """`if i % world != rank: continue`, or `x[rank::world]` / `x.chunk(world)[rank]` in the
    body: the loop itself takes each rank's part of every batch."""
    for stmt in loop.body:
        if isinstance(stmt, ast.If) and len(stmt.body) == 1 and isinstance(stmt.body[0], ast.Continue) \
                and mentions_sharding(stmt.test):
            return True
    return any(isinstance(n, ast.Subscript) and mentions_sharding(n.slice) for n in iter_scope(loop.body))


def _plain_values(name: str, scope: ast.AST, model: SemanticModel) -> Optional[list[ast.AST]]:
    """Every value `name` is given in `scope` (or, when not bound there, at module level); None
    when one binding is not a plain assignment (a parameter, an unpacking, a loop target)."""
    bindings = model.scope_info(scope).assignments.get(name)  # type: ignore[arg-type]
    if not bindings and scope is not model.tree and not model.is_local(name, scope):  # type: ignore[arg-type]
        bindings = model.module_scope.assignments.get(name)
    values = []
    for b in bindings:
        if b.index is not None or b.value is None or not isinstance(b.node, (ast.Assign, ast.AnnAssign)):
            return None
        values.append(b.value)
    return values or None


def loader_calls(it: ast.AST, lineno: int, model: SemanticModel, depth: int = 0) -> Optional[list[ast.Call]]:
    """The `DataLoader(...)` calls a loop's iterable can be: the call itself, a name every
    binding of which is one, `self.loader` assigned one, or a same-file helper returning one."""
    if depth > MAX_DEPTH:
        return None
    if isinstance(it, ast.Call):
        if model.call_name(it) == DATALOADER:
            return [it]
        found = model.returned_value(it)
        if found is None or found[0] is not None:  # not a helper of this file
            return None
        value = found[2]
        if isinstance(value, ast.Name):
            value = model.sole_value(value.id, found[1])  # type: ignore[assignment]
        return [value] if isinstance(value, ast.Call) and model.call_name(value) == DATALOADER else None
    if isinstance(it, ast.Name):
        values = _plain_values(it.id, model.scope, model)
        if values is None or any(isinstance(v, ast.Name) for v in values):
            return None
        calls: list[ast.Call] = []
        for value in values:
            found_calls = loader_calls(value, lineno, model, depth + 1)
            if found_calls is None:
                return None
            calls += found_calls
        return calls
    if isinstance(it, ast.Attribute) and isinstance(it.value, ast.Name) and it.value.id == "self" and model.classes:
        attr = model.self_attribute_value(it.attr)
        return loader_calls(attr, lineno, model, depth + 1) if isinstance(attr, ast.Call) else None
    return None


def scope_of(node: ast.AST, model: SemanticModel) -> ast.AST:
    """The function (or the module) whose own code holds `node`."""
    key = ("ddp-scope-of",)
    found = model.memo.get(key)
    if found is None:
        table: dict[int, ast.AST] = {}
        stack: list[tuple[ast.AST, ast.AST]] = [(model.tree, model.tree)]
        while stack:
            sub, scope = stack.pop()
            if isinstance(sub, ast.Call):
                table[id(sub)] = scope
            inner = sub if isinstance(sub, FUNCTION_TYPES) else scope
            stack.extend((child, inner) for child in iter_children(sub))
        found = model.memo[key] = table
    return found.get(id(node), model.tree)  # type: ignore[attr-defined]


_RANDOM_SAMPLERS = frozenset({"RandomSampler", "WeightedRandomSampler"})
_PLAIN_SAMPLERS = _RANDOM_SAMPLERS | {"SequentialSampler", "BatchSampler"}


def plain_sampler(expr: ast.AST, scope: ast.AST, model: SemanticModel, depth: int = 0) -> Optional[bool]:
    """Whether a sampler that never consults the process group (torch's `RandomSampler`,
    `WeightedRandomSampler`, `SequentialSampler`, or a `BatchSampler` over one) shuffles; None
    for any other sampler, and for one built from anything that names the rank."""
    if isinstance(expr, ast.Name) and depth < MAX_DEPTH:
        values = _plain_values(expr.id, scope, model)
        found = {plain_sampler(v, scope, model, depth + 1) for v in values or [ast.Constant(None)]}
        return found.pop() if len(found) == 1 else None
    if not isinstance(expr, ast.Call) or mentions_sharding(expr) or _inputs_shard(expr, scope, model):
        return None
    name = model.module_scope.imports.call_name(expr) or model.call_name(expr) or ""
    short = name.rsplit(".", 1)[-1]
    if not name.startswith("torch.utils.data.") or short not in _PLAIN_SAMPLERS:
        return None
    if short == "BatchSampler":
        inner = arg_or_keyword(expr, 0, "sampler")
        return plain_sampler(inner, scope, model, depth + 1) if inner is not None else None
    return short in _RANDOM_SAMPLERS


def dataset_kind(expr: ast.AST, scope: ast.AST, model: SemanticModel, depth: int = 0) -> Optional[DatasetKind]:
    """What kind of dataset `expr` (in `scope`) is, when torchlint can read it and nothing in
    its making names the rank or a shard; None otherwise."""
    if depth > MAX_DEPTH or mentions_sharding(expr):
        return None
    if isinstance(expr, ast.Name):
        values = _plain_values(expr.id, scope, model)
        kinds = [dataset_kind(v, scope, model, depth + 1) for v in values or ()]
        return kinds[0] if kinds and all(k is not None for k in kinds) else None
    if isinstance(expr, (ast.List, ast.Tuple, ast.ListComp)):
        return DatasetKind("a list")
    if isinstance(expr, ast.Subscript):  # `load_dataset(...)["train"]`
        inner = dataset_kind(expr.value, scope, model, depth + 1)
        return inner if inner is not None and inner.name == "load_dataset" else None
    if isinstance(expr, ast.Call):
        return None if _inputs_shard(expr, scope, model) else _call_kind(expr, scope, model, depth)
    return None


def _inputs_shard(call: ast.Call, scope: ast.AST, model: SemanticModel, depth: int = 0) -> bool:
    """Do the names a dataset is built from, followed back through their assignments (`files =
    all_files[rank::world]`), or the same-file functions it calls (`load_split(args)` reading
    `args.rank`), name the rank or a shard?"""
    inputs = [*call.args, *(k.value for k in call.keywords)]
    if isinstance(call.func, ast.Attribute):
        inputs.append(call.func.value)  # `ds.shard(...)`, `make(files).map(f)`
    for sub in (n for expr in inputs for n in ast.walk(expr)):
        if isinstance(sub, ast.Name) and depth < MAX_DEPTH:
            for value in _plain_values(sub.id, scope, model) or ():
                if mentions_sharding(value) or isinstance(value, ast.Call) and _inputs_shard(value, scope, model,
                                                                                             depth + 1):
                    return True
        elif isinstance(sub, ast.Call):
            fn = model.called_function(sub)  # of this file, or another of the project
            if fn is not None and mentions_sharding(fn):
                return True
    return False


def _call_kind(call: ast.Call, scope: ast.AST, model: SemanticModel, depth: int) -> Optional[DatasetKind]:
    # The walk's own scope knows its function-level imports; elsewhere, the module's.
    name = model.call_name(call) if scope is model.scope else model.module_scope.imports.call_name(call)
    func = call.func
    if name is None and isinstance(func, ast.Name) and func.id in ("list", "range") \
            and not model.is_local(func.id, scope):  # type: ignore[arg-type]
        return DatasetKind("a list")
    if name is not None and name.split(".", 1)[0] in _LIBRARIES:
        return _library_kind(name, call, scope, model, depth)
    if isinstance(func, ast.Attribute) and func.attr in _HF_METHODS:
        inner = dataset_kind(func.value, scope, model, depth + 1)
        return inner if inner is not None and inner.name == "load_dataset" else None
    if isinstance(func, ast.Name):
        cls = model.module_class(func.id)
        if cls is not None:
            return class_kind(cls, model.project_qualname, model.module_class, model, depth)
    found = model.returned_value(call)
    if found is not None and found[0] is None and not mentions_sharding(found[1]):
        return dataset_kind(found[2], found[1], model, depth + 1)
    return _project_class_kind(call, model, depth)


def _library_kind(name: str, call: ast.Call, scope: ast.AST, model: SemanticModel,
                  depth: int) -> Optional[DatasetKind]:
    short = name.rsplit(".", 1)[1]
    if name in _TENSOR_DATASETS:
        if not all(_built_here(a, scope, model) for a in call.args):
            return None  # tensors the caller passed in may be this rank's part already
        return DatasetKind(short, random=any(draws_random(a, scope, model) for a in call.args))
    if name.startswith(_MAP_PACKAGES):
        return DatasetKind(short)
    if name in _SUBSETS:
        inner = arg_or_keyword(call, 0, "dataset")
        return dataset_kind(inner, scope, model, depth + 1) if inner is not None else None
    if name in _CONCATS:
        parts = arg_or_keyword(call, 0, "datasets")
        if not isinstance(parts, (ast.List, ast.Tuple)) or not parts.elts:
            return None
        kinds = [dataset_kind(p, scope, model, depth + 1) for p in parts.elts]
        return kinds[0] if all(k is not None and not k.iterable for k in kinds) else None
    if name in _HF_LOAD:
        streaming = keyword(call, "streaming")
        return DatasetKind("load_dataset") if streaming is None or literal(streaming) is False else None
    return None


def _project_class_kind(call: ast.Call, model: SemanticModel, depth: int) -> Optional[DatasetKind]:
    """A dataset class of another file of the project (`from data import Tokens`)."""
    index = model.index
    qn = model.project_qualname(call.func) if index is not None else None
    found = index.class_def(qn) if index is not None and qn is not None else None
    if found is None:
        return None
    module = found[0]
    return class_kind(found[1], module.qualname, module.classes.get, model, depth, module)


def class_kind(cls: ast.ClassDef, qualname: _Resolve, local: Callable[[str], Optional[ast.ClassDef]],
               model: SemanticModel, depth: int = 0, module: Optional[ModuleInfo] = None) -> Optional[DatasetKind]:
    """The kind of a dataset class (of this file, or of `module`), judged through its bases;
    None when it names the rank or a shard, or derives from a class torchlint cannot read."""
    if depth > MAX_DEPTH or mentions_sharding(cls):
        return None
    iterable = False
    mapped = any(isinstance(s, FUNCTION_TYPES) and s.name == "__getitem__" for s in cls.body)
    for base in cls.bases:
        qn = qualname(base)
        if qn in _ITERABLE:
            iterable = True
        elif qn in _MAP_STYLE or (qn is not None and qn.startswith(_MAP_PACKAGES)):
            mapped = mapped or qn not in _MAP_STYLE
        else:
            parent = _base_kind(base, qn, (qualname, local, module), model, depth)
            if parent is None:
                return None
            iterable, mapped = iterable or parent.iterable, mapped or not parent.iterable
    if iterable:
        return DatasetKind(cls.name, iterable=True)
    return DatasetKind(cls.name) if mapped else None


def _base_kind(base: ast.AST, qn: Optional[str],
               where: tuple[_Resolve, Callable[[str], Optional[ast.ClassDef]], Optional[ModuleInfo]],
               model: SemanticModel, depth: int) -> Optional[DatasetKind]:
    """The kind of a base class of the project: of the same module (`where`: how that module
    resolves names, finds its classes, and the module, None for this file), or found through
    the index."""
    qualname, local, module = where
    same = local(base.id) if isinstance(base, ast.Name) else None
    if same is not None:
        return class_kind(same, qualname, local, model, depth + 1, module)
    found = model.index.class_def(qn) if model.index is not None and qn is not None else None
    if found is None:
        return None
    return class_kind(found[1], found[0].qualname, found[0].classes.get, model, depth + 1, found[0])
