"""TL107: a loss added to an accumulator inside the training loop keeps every graph alive."""

from __future__ import annotations

import ast

from torchlint.analysis.loops import is_backward
from torchlint.checker import FileContext
from torchlint.fast_dataclass import dataclass, field
from torchlint.records import RuntimeResult
from torchlint.rules.base import Evidence, Rule, Violation, dotted
import torchlint.runtime.judging as run

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional
    from pathlib import Path

_DETACHING = frozenset({"item", "detach", "tolist", "cpu", "numpy"})


def _is_detached(value: ast.AST) -> bool:
    if isinstance(value, ast.Call):
        if isinstance(value.func, ast.Attribute) and value.func.attr in _DETACHING:
            return True
        if isinstance(value.func, ast.Name) and value.func.id in ("float", "int"):
            return True
    return False


class GraphKeptMonitor:
    """Accumulators that keep earlier steps' graphs alive: at each backward, a scalar tensor
    among the local variables of the program's innermost FRAMES frames (the training loop and
    its callers) whose autograd graph reaches the loss backpropagated last in an earlier
    optimizer step. That loss's node is held until the next step (its buffers were freed by its
    backward), so no new node can take its id."""

    FRAMES = 4
    NODES = 256  # graph nodes walked from each candidate, breadth first

    def __init__(self) -> None:
        self.last: dict[int, Any] = {}  # optimizer step -> grad_fn of its last backward
        self.reported: set = set()

    def before_backward(self, m: Any, loss: Any, site: Optional[list], fn: str) -> None:
        if loss is None or fn == "grad" or loss.grad_fn is None:
            return
        earlier = {id(node): step for step, node in self.last.items() if step < m.steps}
        if earlier:
            self.scan(m, loss, earlier)
        self.last = {step: node for step, node in self.last.items() if step >= m.steps - 1}
        self.last[m.steps] = loss.grad_fn

    def scan(self, m: Any, loss: Any, earlier: dict[int, int]) -> None:
        import torch

        for frame in m.user.frames(3, self.FRAMES):
            for name, value in list(frame.f_locals.items()):
                if (value is loss or not isinstance(value, torch.Tensor) or value.grad_fn is None
                        or value.numel() != 1):
                    continue
                key = (frame.f_code, name)
                since = None if key in self.reported else self.reaches(value.grad_fn, earlier)
                if since is not None:
                    self.reported.add(key)
                    m.record("graph_kept", m.user.frame_site(frame), name=name, node=type(value.grad_fn).__name__,
                             since=since, always=True)

    def reaches(self, node: Any, earlier: dict[int, int]) -> Optional[int]:
        """The step of the earlier loss node this graph reaches, if any."""
        seen: set = set()
        queue = [node]
        while queue and len(seen) < self.NODES:
            current = queue.pop(0)
            if current is None or id(current) in seen:
                continue
            if id(current) in earlier:
                return earlier[id(current)]
            seen.add(id(current))
            queue.extend(fn for fn, _ in current.next_functions)
        return None


def run_verdict(obs: run.Observation, path: str, rows: tuple[int, int], cwd: Path) -> RuntimeResult:
    """What the run shows: a local tensor of the training loop that still holds an earlier step's graph."""

    def in_function(e: dict) -> bool:
        site = e.get("site")
        return site is not None and site[0] == path and site[3] <= rows[0] <= site[4]

    backwards = [e for e in obs.by_kind["backward"] if in_function(e)]
    function = (backwards[0]["site"][3], backwards[0]["site"][4]) if backwards else rows
    hits = obs.hits("backward", path, function, len(backwards))
    for e in obs.by_kind["graph_kept"]:
        if in_function(e):
            return run.verdict("confirmed", f"at step {e['step']}, `{e['name']}` (grad_fn {e['node']}) still held the "
                                            f"graph of the loss backpropagated at step {e['since']}: each step's graph "
                                            "stays alive as long as the accumulator", max(hits, 1))
    if not backwards:
        return run.not_reached("no backward ran in the function of this line")
    return run.verdict("not-observed", f"{hits} backward(s) ran in this function over {obs.steps} optimizer step(s); no "
                                       "local tensor held the graph of an earlier step's loss", hits)


# -- evidence (runs only in the --verify worker: see CONTRIBUTING.md) ----------------------
def probe_loss_accumulated(params: dict, device: str) -> tuple[str, str]:
    import torch
    import torch.nn as nn

    model = nn.Linear(4, 1).to(device)
    total: Any = 0
    for _ in range(5):
        loss = model(torch.randn(2, 4, device=device)).sum()
        loss.backward()
        total += loss  # noqa: TL107 - the hazard, on purpose
    nodes = _count_graph(total.grad_fn) if isinstance(total, torch.Tensor) else 0
    if nodes:
        return ("confirmed", f"after 5 steps the accumulator still references {nodes} autograd nodes "
                             f"(grad_fn {type(total.grad_fn).__name__}); with .item() it holds none")
    return "not-reproduced", "the accumulator holds no graph"


def _count_graph(fn: Any) -> int:
    seen, stack = set(), [fn]
    while stack:
        f = stack.pop()
        if f is None or id(f) in seen:
            continue
        seen.add(id(f))
        stack.extend(n for n, _ in getattr(f, "next_functions", ()))
    return len(seen)


def judge_loss_accumulated(facts: dict, runs: list) -> Optional[tuple[str, str]]:
    import torch
    from _evidence import describe, first_line, flag

    rec = flag(runs)
    values = runs[0]["obs"].get("value")
    if rec is None or not values:
        return None
    if rec.get("exc") is not None:
        return "error", f"the flagged line raised {first_line(rec['exc'])}"
    value = values[0]["value"]
    fn = getattr(value, "grad_fn", None)
    if isinstance(value, torch.Tensor) and fn is not None:
        return ("confirmed", f"the accumulated value is {describe(value)} with grad_fn {type(fn).__name__}: "
                             "it keeps this step's autograd graph alive")
    return "not-reproduced", f"the accumulated value is {describe(value)} without a graph"


class LossAppendedWithGraph(Violation):
    accumulator: str
    loss: str

    def message(self) -> str:
        return f"`{self.accumulator}` keeps every `{self.loss}` with its graph: memory grows every step"

    def help_text(self) -> str:
        return f"Append `{self.loss}.item()` (or `{self.loss}.detach()`)"


class LossSummedWithGraph(Violation):
    accumulator: str
    loss: str

    def message(self) -> str:
        return f"`{self.accumulator}` accumulates `{self.loss}` with its graph: memory grows every step"

    def help_text(self) -> str:
        return f"Accumulate `{self.loss}.item()` (or `{self.loss}.detach()`)"


class LossAccumulatedWithGraph(Rule):
    """On the 2026-12 held-out corpus (54 projects, independent triage), 0 of 8 findings were true;
    off by default. Enable it with `--extend-select TL107`.

    ## What it does
    Flags, inside a loop that calls `.backward()` on a loss, an accumulation of that loss into
    another variable (`total += loss`, `total = total + loss`, `total += loss * n`) or into a list
    (`losses.append(loss)`) without `.item()`, `.detach()` or `float(...)`.

    Not flagged when the accumulator is re-assigned (or a list emptied with `.clear()`) in the
    same loop (`running = 0` after each optimizer step, as gradient-accumulation recipes do): its
    graph then lives one step, not the whole loop.

    ## Why is this bad?
    `loss` carries its autograd graph. Adding it to an accumulator makes the accumulator depend on
    every iteration's graph, so none of them can be freed: memory grows each step until the run
    goes out of memory (the PyTorch FAQ's "don't accumulate history across your training loop").
    Summing losses and calling `.backward()` once after the loop is correct and is not flagged;
    neither is an accumulator that is itself backpropagated.

    ## Example
    ```python
    total = 0
    for x, y in loader:
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        total += loss
    ```

    ## Use instead
    ```python
    total = 0.0
    for x, y in loader:
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        total += loss.item()
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [PyTorch FAQ: my model reports cuda runtime error(2): out of memory](https://pytorch.org/docs/stable/notes/faq.html)
    """

    code = "TL107"
    name = "loss-accumulated-with-graph"
    summary = "Loss summed into an accumulator without .item()/.detach() keeps every graph alive"
    peer_checks = {"TG001": "covered"}  # rules_docs/peer-parity.md
    severity = "warning"
    default_enabled = False
    tags = ("performance", "memory", "training-loop")
    requires_text = ('backward',)

    evidence = Evidence(generic_probe=True, probe=probe_loss_accumulated, slice="statement-value", judge=judge_loss_accumulated,
                        runtime=run_verdict, monitor=GraphKeptMonitor)

    # The walk collects, for every enclosing loop of the current function, what its body
    # backpropagates, detaches, re-assigns and accumulates; `leave_For` decides once.
    def setup(self, ctx: FileContext) -> None:
        self.loops: dict[int, _LoopFacts] = {}

    def _enter(self, loop: ast.AST, ctx: FileContext) -> None:
        self.loops[id(loop)] = _LoopFacts()

    def _facts(self, ctx: FileContext) -> list["_LoopFacts"]:
        return [self.loops[id(loop)] for loop in ctx.loops if id(loop) in self.loops]

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        if not ctx.loops or not isinstance(node.func, ast.Attribute):
            return
        func = node.func
        if is_backward(node, ctx) and isinstance(func.value, ast.Name):
            for facts in self._facts(ctx):
                facts.backpropagated.add(func.value.id)
        elif func.attr == "append" and len(node.args) == 1 and not node.keywords and isinstance(node.args[0], ast.Name):
            for facts in self._facts(ctx):  # `losses.append(loss)`: the list holds every graph
                facts.accumulations.append((node, dotted(func.value), node.args[0].id))
        elif func.attr == "clear" and not node.args:
            for facts in self._facts(ctx):  # emptied in the loop: the graphs live one step
                facts.reassigned.add(dotted(func.value))

    def visit_Assign(self, node: ast.Assign, ctx: FileContext) -> None:
        if not ctx.loops:
            return
        facts = self._facts(ctx)
        if _is_detached(node.value):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    for f in facts:
                        f.detached.add(target.id)
        self._record(node, facts)

    def visit_AugAssign(self, node: ast.AugAssign, ctx: FileContext) -> None:
        if ctx.loops:
            self._record(node, self._facts(ctx))

    def _record(self, node: ast.AST, facts: list["_LoopFacts"]) -> None:
        found = self._accumulation(node)
        if found is not None:
            for f in facts:
                f.accumulations.append((node, *found))
        elif isinstance(node, ast.Assign):
            for f in facts:
                f.reassigned.update(dotted(t) for t in node.targets)

    def _leave(self, loop: ast.AST, ctx: FileContext) -> None:
        facts = self.loops.pop(id(loop), None)
        if facts is None:
            return
        losses = facts.backpropagated - facts.detached  # re-bound to a number: not a graph
        for node, acc, loss in facts.accumulations:
            if loss not in losses or acc in facts.backpropagated:
                continue  # the accumulator itself is backpropagated: keeping its graph is the point
            if acc in facts.reassigned:
                continue  # reset in the loop (after each step): the graph lives one step
            if isinstance(node, ast.Call):
                self.report(node, LossAppendedWithGraph(accumulator=acc, loss=loss))
                continue
            self.report(node, LossSummedWithGraph(accumulator=acc, loss=loss))

    visit_For = _enter
    visit_AsyncFor = _enter
    visit_While = _enter
    leave_For = _leave
    leave_AsyncFor = _leave
    leave_While = _leave

    @staticmethod
    def _accumulation(node: ast.AST) -> Optional[tuple[str, str]]:
        """(accumulator, loss name) for `acc += loss`, `acc = acc + loss`, `acc += loss * n`."""
        if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add):
            target, value = node.target, node.value
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.value, ast.BinOp) \
                and isinstance(node.value.op, ast.Add) and isinstance(node.targets[0], (ast.Name, ast.Attribute)) \
                and dotted(node.value.left) == dotted(node.targets[0]):
            target, value = node.targets[0], node.value.right
        else:
            return None
        if not isinstance(target, (ast.Name, ast.Attribute)):
            return None
        if isinstance(value, ast.BinOp) and isinstance(value.op, (ast.Mult, ast.Div)):
            value = value.left if isinstance(value.left, ast.Name) else value.right
        if isinstance(value, ast.Name):
            return dotted(target), value.id
        return None


@dataclass
class _LoopFacts:
    backpropagated: set[str] = field(default_factory=set)  # names `.backward()` is called on
    detached: set[str] = field(default_factory=set)  # names also re-bound to `.item()` etc.
    reassigned: set[str] = field(default_factory=set)  # targets of plain assignments
    accumulations: list[tuple[ast.AST, str, str]] = field(default_factory=list)
