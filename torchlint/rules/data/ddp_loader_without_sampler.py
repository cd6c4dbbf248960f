"""TL308: a training DataLoader under DistributedDataParallel with no DistributedSampler and no
other sharding by rank: every rank iterates the whole dataset."""

from __future__ import annotations

import ast
from collections import defaultdict

from torchlint.analysis import ddp_sharding as shard
from torchlint.analysis.astutil import bound_arguments
from torchlint.analysis.dataloader import iterated
from torchlint.analysis.loops import is_backward, is_optimizer_step
from torchlint.analysis.scopes import iter_scope
from torchlint.analysis.torch_api import DDP
from torchlint.analysis.training_step import trains
from torchlint.checker import FileContext
from torchlint.records import RuntimeResult
from torchlint.rules.base import Evidence, Rule, Violation, arg_or_keyword, has_star_kwargs, keyword, literal
import torchlint.runtime.judging as run

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional, Union
    from pathlib import Path
    _Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]


# -- evidence (runs only in the --verify worker: see CONTRIBUTING.md) ----------------------
def _sharding_rank(rank: int, world: int, store: str, out: str, given: dict, group: bool) -> None:
    """One rank: the finding's loader arguments over a 16-sample dataset; writes the batches."""
    import json

    import torch
    import torch.distributed as dist
    from torch.utils.data import DataLoader, DistributedSampler, IterableDataset

    class Stream(IterableDataset):
        def __iter__(self):  # type: ignore[no-untyped-def]
            return iter(range(16))

    if group:
        dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    # The program seeds every rank alike, or each process starts from its own seed (as torchrun's do).
    torch.manual_seed(0) if given["seeded"] else torch.seed()
    data: Any = Stream() if given["iterable"] else list(range(16))
    options: dict[str, Any] = {"batch_size": given["batch_size"]}
    if given["sampler"]:
        options["sampler"] = DistributedSampler(data, num_replicas=world, rank=rank, shuffle=given["shuffle"])
    elif given["shuffle"] and not given["iterable"]:
        options["shuffle"] = True
    batches = [[int(i) for i in b] for b in DataLoader(data, **options)]
    with open(out, "w", encoding="utf-8") as f:
        json.dump(batches, f)
    if group:
        dist.destroy_process_group()


def probe_ddp_loader_sharding(params: dict, device: str) -> tuple[str, str]:
    """Two ranks (gloo, where TCP on loopback exists) build the loader with the finding's
    arguments and record which samples each gets. Facts: `shuffle`, `seeded` (every rank seeded
    alike), `batch_size`, `iterable`; `sampler` (never a finding's) shards it, to show the "no"."""
    import json
    import multiprocessing
    import os
    import sys
    import tempfile

    if not sys.platform.startswith("linux"):
        return "skipped", "the probe forks its two ranks, which needs Linux"
    given = {"shuffle": bool(params.get("shuffle")), "seeded": bool(params.get("seeded")),
             "iterable": bool(params.get("iterable")), "sampler": bool(params.get("sampler")),
             "batch_size": int(params.get("batch_size") or 4)}
    layers = os.environ.get("TORCHLINT_SANDBOX")
    group = layers is None or "net namespace" in layers or "UNSANDBOXED" in layers
    with tempfile.TemporaryDirectory() as tmp:
        outs = [os.path.join(tmp, f"rank{r}.json") for r in range(2)]
        # Up to 3 tries, each with a fresh file store: gloo's TCP setup can abort a rank on a
        # busy machine, which says nothing about the loader.
        for attempt in range(3):
            # fork: the ranks start in a moment; no thread of this worker runs while they do.
            procs = [multiprocessing.get_context("fork").Process(
                target=_sharding_rank, args=(r, 2, os.path.join(tmp, f"store{attempt}"), outs[r], given, group))
                for r in range(2)]
            for p in procs:
                p.start()
            for p in procs:
                p.join(120)
                if p.is_alive():  # hung: it must not hold the next try's store or port
                    p.kill()
                    p.join()
            if all(p.exitcode == 0 for p in procs):
                break
        else:
            return "skipped", f"a probe rank failed 3 times (exit codes {[p.exitcode for p in procs]})"
        got = []
        for out in outs:
            with open(out, encoding="utf-8") as f:
                got.append(json.load(f))
    how = "2 gloo ranks" if group else "2 processes (no process group: this sandbox has no loopback TCP)"
    seen = [sorted(i for b in batches for i in b) for batches in got]
    what = "an IterableDataset over range(16)" if given["iterable"] else "a 16-sample dataset"
    if seen[0] == seen[1] == list(range(16)):
        same = "the same batches in the same order" if got[0] == got[1] else \
            f"different orders (rank 0 starts {got[0][0]}, rank 1 {got[1][0]}), every sample on both ranks"
        return "confirmed", f"{how}, {what}: each rank iterated all 16 samples, {same}"
    return "not-reproduced", (f"{how}, {what}: the ranks got disjoint shards ({len(seen[0])} and {len(seen[1])} "
                              f"samples)")


def run_verdict(obs: run.Observation, path: str, rows: tuple[int, int], cwd: Path) -> RuntimeResult:
    """What the run shows: each rank's batch fingerprints, from identical-batches-across-ranks's
    monitor."""
    by_site: dict[tuple, dict[int, list[str]]] = defaultdict(lambda: defaultdict(list))
    for e in obs.by_kind["batch"]:
        if e.get("world", 1) > 1 and e.get("site"):
            by_site[tuple(e["site"][:2])][e["rank"]].append(e["hash"])
    compared = [(site, ranks) for site, ranks in by_site.items() if len(ranks) > 1]
    compared = [c for c in compared if c[0][0] == path] or compared  # the model's calls in this file first
    if not compared:
        return run.verdict("not-observed", "no training forward ran under a process group of more than one rank, "
                                           "so no rank's batches could be compared", 0)
    for site, ranks in compared:
        common = min(len(v) for v in ranks.values())
        if common and all(len({ranks[r][i] for r in ranks}) == 1 for i in range(common)):
            return run.verdict("confirmed", f"all {len(ranks)} ranks fed the model identical batches in the {common} "
                                            f"training forward(s) compared at {run.where(list(site), cwd)} (TL520)",
                               common)
    site, ranks = compared[0]
    return run.verdict("not-observed", f"the {len(ranks)} ranks fed the model different batches at "
                                       f"{run.where(list(site), cwd)}", 0)


class LoaderWithoutDistributedSampler(Violation):
    order: str  # "same": no shuffle; "seeded": shuffled alike on every rank; "own": each rank its own order
    help = ("Pass `sampler=DistributedSampler(dataset)` (shuffle in the sampler) and call "
            "`sampler.set_epoch(epoch)` each epoch")

    def message(self) -> str:
        how = {"same": "all data in the same batches", "seeded": "all data in the same seeded batches",
               "own": "all data, each in its own order"}[self.order]
        return f"DDP training loader without a `DistributedSampler`: every rank iterates {how}"


class StreamNotShardedByRank(Violation):
    dataset: str  # the IterableDataset class
    help = "Split the stream by `dist.get_rank()` and `dist.get_world_size()` in `__iter__`"

    def message(self) -> str:
        return f"`{self.dataset}` never reads the rank: every DDP rank iterates the whole stream, the same batches"


class DdpLoaderWithoutSampler(Rule):
    """## What it does
    Flags a `DataLoader(...)` that a training loop (one that calls `backward()` or an optimizer
    `step()`) iterates, in a function that sets up `DistributedDataParallel` (it wraps the
    model, calls a helper of the project that does, in this file or another, or is given the
    wrapped model by a function that does; or a method of a class that does), when the loader
    has no `sampler=` or `batch_sampler=` (or only torch's `RandomSampler`,
    `WeightedRandomSampler`, `SequentialSampler` or a `BatchSampler` over one, which never
    consult the process group) and nothing shards its dataset by rank. Only datasets
    torchlint can read are judged: a class of the project (map-style, or an `IterableDataset`
    whose class never mentions the rank, the world size, shards or `get_worker_info`),
    `torchvision`/`torchaudio` datasets, a `TensorDataset` of tensors built where the loader is,
    `Subset`/`ConcatDataset` of those, Hugging Face `load_dataset(...)` without streaming, and
    lists. Not flagged: a dataset built with anything naming the rank, the world size, replicas,
    shards or partitions (`split_dataset_by_node`, `files[rank::world]`, `.shard(...)`), a
    dataset of another library or a function parameter (it may be sharded already), synthetic
    tensors drawn at random without a seed shared by the ranks (each rank draws its own), a
    loader that goes through `accelerator.prepare`/Lightning (they shard for you), a loop that
    skips or slices batches by rank, `**kwargs`, loaders only iterated for evaluation, tests
    (`test_*` functions and files, which feed every rank the same data on purpose), and FSDP
    (not judged).

    ## Why is this bad?
    A `DataLoader` without a sampler uses a `SequentialSampler` (or a `RandomSampler` with
    `shuffle=True`), which never consults the process group: every rank iterates the whole
    dataset. Without shuffling, or with every rank seeded alike, all ranks get the same batches
    in the same order, so N GPUs compute the same gradient N times and each step trains on one
    rank's worth of distinct data. With shuffling and per-process seeds (an unseeded process
    gets its own default seed), each rank walks its own permutation of all the data: an
    "epoch" is N passes over it. Checked on torch 2.13:
    two gloo ranks with `DataLoader(list(range(16)), batch_size=4)` each get all 16 samples in
    the same batches; with a `DistributedSampler`, 8 each, disjoint.

    ## Example
    ```python
    import torchvision

    def train(rank, epochs):
        model = DDP(Net().to(rank), device_ids=[rank])
        dataset = torchvision.datasets.CIFAR10("data", train=True, download=True)
        loader = DataLoader(dataset, batch_size=32, shuffle=True)
        for epoch in range(epochs):
            for x, y in loader:
                F.cross_entropy(model(x.to(rank)), y.to(rank)).backward()
    ```

    ## Use instead
    ```python
    import torchvision
    from torch.utils.data.distributed import DistributedSampler

    def train(rank, epochs):
        model = DDP(Net().to(rank), device_ids=[rank])
        dataset = torchvision.datasets.CIFAR10("data", train=True, download=True)
        sampler = DistributedSampler(dataset, shuffle=True)
        loader = DataLoader(dataset, batch_size=32, sampler=sampler)
        for epoch in range(epochs):
            sampler.set_epoch(epoch)
            for x, y in loader:
                F.cross_entropy(model(x.to(rank)), y.to(rank)).backward()
    ```
    An `IterableDataset` takes no sampler: split its stream by `dist.get_rank()` and
    `dist.get_world_size()` in `__iter__`.

    ## Fix safety
    No automatic fix: a sampler also needs `sampler.set_epoch(epoch)` each epoch and moves
    `shuffle=` from the loader to the sampler.

    ## References
    - [torch.utils.data.distributed.DistributedSampler](https://pytorch.org/docs/stable/data.html#torch.utils.data.distributed.DistributedSampler)
    - [Getting started with DDP](https://pytorch.org/tutorials/intermediate/ddp_tutorial.html)
    """

    code = "TL308"
    name = "ddp-loader-without-sampler"
    summary = "Training DataLoader under DDP without a DistributedSampler: every rank iterates the whole dataset"
    severity = "warning"
    tags = ("correctness", "distributed", "data-loading")
    requires_text = ("DataLoader",)
    evidence = Evidence(probe=probe_ddp_loader_sharding, runtime=run_verdict)
    peer_checks = {"TG012": "covered statically, where the dataset and the DDP setup can be read and nothing shards by rank"}  # rules_docs/peer-parity.md

    def setup(self, ctx: FileContext) -> None:
        self.ddp_scopes: set[int] = set()  # functions (or the module) that wrap a model in DDP
        self.calls: dict[int, set[int]] = defaultdict(set)  # scope -> same-file functions it calls
        self.passed: dict[tuple[int, int], set[str]] = defaultdict(set)  # (scope, function) -> names passed
        self.ddp_models: dict[int, set[str]] = defaultdict(set)  # scope -> names bound to a DDP model
        self.assigned: dict[tuple[int, int], set[str]] = defaultdict(set)  # (scope, function) -> names it binds
        self.method_class: dict[int, int] = {}  # method -> its class
        base = ctx.source.path.replace("\\", "/").rsplit("/", 1)[-1]
        self.one_rank = False  # `init_process_group(..., world_size=1)`: nothing to split
        self.in_tests = base.startswith("test_") or base.endswith("_test.py") or base == "conftest.py"
        self.candidates: list[tuple[int, ast.Call, shard.Loader]] = []  # the training loop's scope

    def visit_FunctionDef(self, node: _Function, ctx: FileContext) -> None:
        if isinstance(ctx.parent, ast.ClassDef):
            self.method_class[id(node)] = id(ctx.parent)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        name = ctx.call_name(node)
        if name == DDP:
            self._wrapped_here(ctx)
            return
        if name == "torch.distributed.init_process_group":
            size = keyword(node, "world_size")
            self.one_rank = self.one_rank or (size is not None and literal(size.value) == 1)
            return
        fn = ctx.called_function(node)
        if fn is None:
            return
        imported = ctx.imported_function(node)
        foreign = imported is not None and imported[1] is fn
        if foreign and shard.wraps_ddp(fn, imported[0].call_name):  # type: ignore[index]
            self._wrapped_here(ctx)  # `model = setup_ddp(model)` from another file
        self.calls[id(ctx.scope)].add(id(fn))
        if isinstance(ctx.parent, ast.Assign):  # `model = wrap(model)`: names the model if `wrap` wraps DDP
            self.assigned[(id(ctx.scope), id(fn))].update(t.id for t in ctx.parent.targets if isinstance(t, ast.Name))
        self.passed[(id(ctx.scope), id(fn))].update(a.id for a in (*node.args, *(k.value for k in node.keywords))
                                                   if isinstance(a, ast.Name))
        for param, arg in bound_arguments(fn, node):
            if isinstance(arg, ast.Name) and param in self._training_parameters(fn, foreign, ctx):
                self._candidate(arg, node.lineno, ctx)

    def _wrapped_here(self, ctx: FileContext) -> None:
        """This scope wraps a model in DDP; `model = DDP(...)` names it."""
        self.ddp_scopes.add(id(ctx.scope))
        parent = ctx.parent
        if isinstance(parent, ast.Assign):
            self.ddp_models[id(ctx.scope)].update(t.id for t in parent.targets if isinstance(t, ast.Name))

    def visit_For(self, node: ast.For, ctx: FileContext) -> None:
        it = iterated(node)
        if it is not None and trains(node, ctx) and not shard.loop_shards_batches(node):
            self._candidate(it, node.lineno, ctx)

    def _candidate(self, it: ast.AST, lineno: int, ctx: FileContext) -> None:
        if self.in_tests or any(getattr(f, "name", "").startswith("test") for f in ctx.functions):
            return  # a test of DDP itself feeds every rank the same data on purpose
        calls = shard.loader_calls(it, lineno, ctx) or []
        found = [self._unsharded(call, ctx) for call in calls]
        if all(f is not None for f in found):  # else one binding is sharded or unknown: the loop may get that one
            self.candidates += [(id(ctx.scope), call, f) for call, f in zip(calls, found)]  # type: ignore[misc]

    def _unsharded(self, call: ast.Call, ctx: FileContext) -> Optional[shard.Loader]:
        if has_star_kwargs(call) or any(isinstance(a, ast.Starred) for a in call.args):
            return None
        scope = shard.scope_of(call, ctx)
        shuffled: Optional[bool] = None  # set by a plain torch sampler
        for index, name in ((3, "sampler"), (4, "batch_sampler")):
            given = arg_or_keyword(call, index, name)
            if given is not None and literal(given) is not None:
                shuffled = shard.plain_sampler(given, scope, ctx)
                if shuffled is None:
                    return None  # a DistributedSampler, or one torchlint cannot read
        dataset = arg_or_keyword(call, 0, "dataset")
        kind = shard.dataset_kind(dataset, scope, ctx) if dataset is not None else None
        if kind is None or kind.iterable and keyword(call, "worker_init_fn") is not None:
            return None
        seeded = shard.seeded_alike(scope, ctx) or shard.seeded_alike(ctx.tree, ctx)
        if kind.random and not seeded:
            return None  # synthetic data each process draws from its own seed: the ranks' batches differ
        shuffle = arg_or_keyword(call, 2, "shuffle")
        size = literal(arg_or_keyword(call, 1, "batch_size"))
        if shuffled is None:
            shuffled = shuffle is not None and literal(shuffle) is not False
        return shard.Loader(kind, shuffled, size if isinstance(size, int) and not isinstance(size, bool) else 0, seeded)

    def _training_parameters(self, fn: _Function, foreign: bool, ctx: FileContext) -> frozenset[str]:
        """The parameters of `fn` that it iterates in a loop that trains."""
        key = ("ddp-training-parameters", id(fn))
        found = ctx.memo.get(key)
        if found is None:
            names = set()
            for loop in iter_scope(fn.body):
                if isinstance(loop, ast.For) and isinstance(iterated(loop), ast.Name) \
                        and not shard.loop_shards_batches(loop) and self._loop_trains(loop, foreign, ctx):
                    names.add(iterated(loop).id)  # type: ignore[union-attr]
            params = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)}
            found = ctx.memo[key] = frozenset(names & params)
        return found  # type: ignore[return-value]

    @staticmethod
    def _loop_trains(loop: ast.For, foreign: bool, ctx: FileContext) -> bool:
        if not foreign:
            return trains(loop, ctx)
        return any(isinstance(c, ast.Call) and (is_backward(c, ctx) or is_optimizer_step(c))
                   for c in iter_scope(loop.body))

    def end_file(self, ctx: FileContext) -> None:
        ddp = set(self.ddp_scopes)
        for scope, callees in self.calls.items():  # a helper of this file wraps the model
            for fn in callees & self.ddp_scopes:
                ddp.add(scope)
                self.ddp_models[scope] |= self.assigned[(scope, fn)]
        ddp |= {fn for scope in list(ddp) for fn in self.calls.get(scope, ())  # given the DDP model
                if self.passed[(scope, fn)] & self.ddp_models[scope]}
        classes = {self.method_class[s] for s in ddp if s in self.method_class}
        ddp |= {m for m, cls in self.method_class.items() if cls in classes}
        for scope, call, loader in self.candidates:
            if scope in ddp and not self.one_rank:
                self._report(call, loader)

    def _report(self, call: ast.Call, loader: shard.Loader) -> None:
        if loader.kind.iterable:
            self.report(call, StreamNotShardedByRank(dataset=loader.kind.name),
                        params={"iterable": True, "batch_size": loader.batch_size})
            return
        order = "same" if not loader.shuffle else "seeded" if loader.seeded else "own"
        self.report(call, LoaderWithoutDistributedSampler(order=order),
                    params={"shuffle": loader.shuffle, "seeded": loader.seeded, "batch_size": loader.batch_size})
