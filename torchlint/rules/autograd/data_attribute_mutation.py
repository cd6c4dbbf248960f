"""TL102: writes through `.data` that autograd never sees."""

from __future__ import annotations

import ast
import sys
import weakref



from torchlint.analysis import inference
from torchlint.analysis.training_step import in_forward_backward_window
from torchlint.checker import FileContext
from torchlint.edits import UNSAFE, edit, end_of, has_comment, make_fix, module_alias, start_of, text_of
from torchlint.records import RuntimeResult
from torchlint.rules.base import Evidence, Option, Rule, Violation, dotted
import torchlint.runtime.judging as run

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Optional
    from pathlib import Path


_NOT_TENSORS = ("self", "cls")
# Weight set-up code (initialisation, checkpoint conversion and loading, deploy-time fusion)
# runs before any autograd graph exists, so `.data` writes there cannot corrupt a gradient.
_SETUP_NAME_PARTS = ("init", "reset_parameters", "convert", "load", "fuse")
# In-place methods that change only shape or strides, never values a backward could read.
_METADATA_ONLY = frozenset({"unsqueeze_", "squeeze_", "resize_", "resize_as_", "t_", "transpose_",
                            "swapdims_", "swapaxes_", "as_strided_", "requires_grad_", "share_memory_",
                            "detach_", "retain_grad"})
# `p.data = p.data.float()`: a dtype/device/layout change that keeps the Parameter object.
_CONVERSIONS = frozenset({"float", "half", "double", "bfloat16", "to", "type", "cuda", "cpu", "contiguous",
                          "clone", "detach", "pin_memory"})
_AUG_OPS = {ast.Add: "+=", ast.Sub: "-=", ast.Mult: "*=", ast.Div: "/=", ast.Pow: "**=",
            ast.FloorDiv: "//=", ast.Mod: "%=", ast.BitAnd: "&=", ast.BitOr: "|=", ast.MatMult: "@="}


def _data_receiver(node: ast.AST) -> Optional[ast.Attribute]:
    """The `X.data` node when `node` is `X.data` or `X.data[...]`."""
    if isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Attribute) and node.attr == "data":
        return node
    return None


def run_verdict(obs: run.Observation, path: str, rows: tuple[int, int], cwd: Path) -> RuntimeResult:
    """What the run shows: a `.data` write between a forward and its backward on a tensor an autograd node saved."""
    writes = [e for e in obs.by_kind["data_write"] if run.at(e["site"], path, rows)]
    hits = obs.hits("data", path, rows, len(writes))
    if not hits:
        return run.not_reached("no `.data` access ran at this line")
    for e in writes:
        if e.get("saved_by"):
            what = f"`{e['name']}`" if e.get("name") else "a tensor"
            tensor = e["tensor"]
            return run.verdict("confirmed", f"at step {e['step']}, `.data` of {what} {run.shape(tensor)} {tensor['dtype']} "
                                            f"was written after the forward at {run.where(e['forward_site'], cwd)} and "
                                            f"before the backward at {run.where(e['backward_site'], cwd)}, while "
                                            f"{e['saved_by']} held it for backward: the gradient used the new values",
                               hits)
    if writes:
        return run.verdict("not-observed", f"ran {hits} time(s); {len(writes)} write(s) fell between a forward and its "
                                           "backward, but no autograd node had saved the written tensor", hits)
    return run.verdict("not-observed", f"ran {hits} time(s); no write happened while a forward awaited its backward",
                       hits)


class DataWriteMonitor:
    """`.data` accesses of tensors that require grad while a forward awaits its backward, and,
    at the backward, those written meanwhile (assigned, or their alias's version bumped) with
    the autograd node that had saved the written storage."""

    def __init__(self) -> None:
        self.pending: list[dict] = []

    def install(self, m: Any, torch: Any) -> None:
        descriptor = torch._C.TensorBase.__dict__["data"]
        monitor = self

        def get_data(tensor: Any) -> Any:
            alias = descriptor.__get__(tensor)
            if m.user.is_user(sys._getframe(1).f_code.co_filename):
                monitor.note(m, tensor, alias, assigned=False)
            return alias

        def set_data(tensor: Any, value: Any) -> None:
            descriptor.__set__(tensor, value)
            if m.user.is_user(sys._getframe(1).f_code.co_filename):
                monitor.note(m, tensor, None, assigned=True)

        m.patch(torch.Tensor, "data", property(get_data, set_data, doc=descriptor.__doc__))

    def note(self, m: Any, tensor: Any, alias: Any, assigned: bool) -> None:
        try:
            site = m.user.site(3)
            key = f"data@{site[0]}:{site[1]}" if site else "data"
            m.counts[key] = m.counts.get(key, 0) + 1
            if not tensor.requires_grad or not m.pending_roots or len(self.pending) > 10_000:
                return
            if assigned and self.pending and self.pending[-1]["ref"]() is tensor:
                self.pending[-1]["assigned"] = True  # `p.data -= x`: the getter saw it first
                return
            self.pending.append({
                "ref": weakref.ref(tensor), "alias": alias if alias is not None else tensor, "assigned": assigned,
                "site": site, "storage": tensor.untyped_storage().data_ptr(), "desc": m.describe(tensor),
                "forward_site": m.pending_roots[-1]["site"],
            })
        except Exception as exc:  # a property getter must never raise on the program's behalf
            m.internal_error("DataWriteMonitor.note", exc)

    def before_backward(self, m: Any, loss: Any, site: Optional[list], fn: str) -> None:
        if loss is None:
            return
        written = [p for p in self.pending if p["assigned"] or p["alias"]._version > 0]
        if not written:
            return
        saved = self.saved_storages(loss) if loss.grad_fn is not None else {}
        names = m.parameter_names()
        for access in written:
            tensor = access["ref"]()
            m.record("data_write", access["site"], backward_site=site, forward_site=access["forward_site"],
                     saved_by=saved.get(access["storage"]), tensor=access["desc"],
                     name=names.get(id(tensor)) if tensor is not None else None, always=True)

    def after_backward(self, m: Any, site: Optional[list], fn: str, accumulates: bool) -> None:
        self.pending.clear()

    @staticmethod
    def saved_storages(loss: Any, limit: int = 10_000) -> dict[int, str]:
        """Storage pointer -> autograd node name, for every tensor saved for this backward."""
        import torch

        out: dict[int, str] = {}
        seen: set = set()
        stack = [loss.grad_fn]
        while stack and len(seen) < limit:
            node = stack.pop()
            if node is None or node in seen:
                continue
            seen.add(node)
            for attr in dir(node):
                if not attr.startswith("_saved_"):
                    continue
                try:
                    value = getattr(node, attr)
                except Exception:  # freed or not a tensor
                    continue
                for tensor in value if isinstance(value, (list, tuple)) else (value,):
                    if isinstance(tensor, torch.Tensor):
                        out.setdefault(tensor.untyped_storage().data_ptr(), type(node).__name__)
            stack.extend(fn for fn, _ in node.next_functions)
        return out


# -- evidence (runs only in the --verify worker: see CONTRIBUTING.md) ----------------------
def probe_data_attribute_mutation(params: dict, device: str) -> tuple[str, str]:
    import torch
    from _evidence import first_line, raises

    def grad_after(mutate: Callable[[torch.Tensor], object]) -> torch.Tensor:
        w = torch.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
        loss = (w * w).sum()  # saves w for backward: d/dw = 2w
        mutate(w)
        loss.backward()
        return w.grad.detach().cpu()  # type: ignore[union-attr]

    def no_grad_mul(w: torch.Tensor) -> None:
        with torch.no_grad():
            w.mul_(10.0)

    true_grad = grad_after(lambda w: None)
    wrong = grad_after(lambda w: w.data.mul_(10.0))
    exc = raises(lambda: grad_after(no_grad_mul))
    guarded = f"; the same write under no_grad raises {first_line(exc)}" if exc else ""
    op = str(params.get("op", "mul_"))
    if not torch.allclose(true_grad, wrong):
        return ("confirmed", f"a write through .data (here `{op}`) after the forward pass: with `w.data.mul_(10)` "
                             f"the gradient of sum(w*w) is {wrong.tolist()}, the true gradient is {true_grad.tolist()}"
                             f"{guarded}; a write before the forward pass is harmless")
    return "not-reproduced", f"gradient unchanged by the .data write ({wrong.tolist()})"


def judge_data_attribute_mutation(facts: dict, runs: list) -> Optional[tuple[str, str]]:
    from _evidence import first_line

    written, tracked = runs
    if not written["obs"].get("flag") or not written["obs"].get("backward"):
        return None
    grads = written["obs"]["backward"][0].get("grads") or {}
    shown = "; ".join(f"{k}.grad={v}" for k, v in list(grads.items())[:2])
    rec = (tracked["obs"].get("backward") or [None])[0]
    exc = rec.get("exc") if rec else tracked.get("error")
    if exc is not None and "inplace operation" in str(exc):
        return ("confirmed", f"the .data write changed a tensor autograd had saved for backward, so the "
                             f"backward pass used the new values ({shown}); the same write without .data makes "
                             f"torch raise {first_line(exc)}")
    if rec is not None and rec.get("grads") is not None:
        if rec["grads"] == grads:
            return ("not-reproduced", f"the gradient after the .data write equals the gradient of the same "
                                      f"write tracked by autograd ({shown}): nothing saved for backward was changed")
        return ("confirmed", f"the gradient with the .data write ({shown}) differs from the gradient of the same "
                             f"write tracked by autograd")
    return None


_NO_GRAD_HELP = "Write under `with torch.no_grad():` so autograd can detect a conflicting backward"


class DataSwap(Violation):
    data: str  # `p.data`
    where: str  # `in forward()` / `before backward()`
    help = _NO_GRAD_HELP

    def message(self) -> str:  # `p.data = value` swaps the data, not a write into it
        return f"`{self.data} = ...` {self.where} swaps saved data unseen by autograd"


class DataWrite(Violation):
    data: str
    where: str
    help = _NO_GRAD_HELP

    def message(self) -> str:
        return f"Write through `{self.data}` {self.where} is unseen by autograd's version check"


class DataAttributeMutation(Rule):
    """On the 2026-12 held-out corpus (54 projects, independent triage), 0 of 4 findings were true;
    off by default. Enable it with `--extend-select TL102`. The figure was measured with the
    forward→backward window below already in place; the false ones were writes after `backward()`
    and `step()` (weight clipping, manual SGD between steps) and a `.data` demo on a tensor no
    graph saved. Since then a window starts at the forward, not at the line that makes the
    step's inputs, so a WGAN critic's clip before the generator's forward is silent; a write on a
    tensor that the forward did not save (`y = 3 * w`) still fires.

    ## What it does
    Flags writes through `Tensor.data`: `p.data -= ...`, `p.data = ...`, `p.data[i] = ...`, and
    in-place tensor methods (`add_`, `mul_`, `copy_`, `zero_`, `fill_`, `normal_`, `uniform_`,
    `clamp_`, any method ending in `_`) called on `x.data`.

    Every write needs a receiver known to be a tensor or parameter (a loop variable over
    `.parameters()`/`.named_parameters()`/`.buffers()`, also through `zip(...)`, an optimizer's
    `group["params"]`, a `.weight`/`.bias`, a `torch.*` or `nn.Parameter` result, the output of
    calling a module, an argument annotated `torch.Tensor`/`nn.Parameter`), so `self.data = data`,
    `batch.data.append(x)` and a namedtuple's `data` field stay silent. Writes on `p.grad.data`
    are not flagged (gradient buffers are never saved for backward), nor are in-place methods
    that change only the shape (`unsqueeze_`, `squeeze_`, `resize_`, `t_`, `transpose_`).

    It fires only where the write can change a tensor that a live graph saved: inside a
    forward→backward window of a training step (a forward or loss computed, then the `.data`
    write, then `backward()` on that loss, in the same loop body or function, also when the
    write sits in a same-file helper called inside that window, or the backward is
    `scaler.scale(loss).backward()`, `accelerator.backward(loss)`, `self.manual_backward(loss)`
    or a same-file helper that calls it), or inside `forward()`. The window comes from
    `torchlint.analysis.training_step`, which other rules share.

    What it leaves out (no graph can have saved the tensor): head re-initialisation before the
    first forward, a custom `Optimizer.step` (it runs after backward, under `no_grad`), LoRA
    merges and other between-step weight edits (EMA, clipping after `step()`), an upcast
    `p.data = p.data.float()` / `.to(dtype)` that keeps the Parameter, gradient buffers reached
    through an alias (`g = p.grad; g.data.div_(n)`), and writes in a nested loop whose own body
    has no backward (an epoch-level loop around the batch loop). Preparing a step's inputs
    (`torch.randn(...)`, `x.to(device)`, `next(it)`) does not start a window: only a call that
    may run a forward does. One line is reported once.

    What really happens: the write itself succeeds. It matters only when the tensor is saved for
    a backward pass that has not run yet (a write between a forward and its `backward()`); the
    gradient is then computed from the new values with no error. On an activation (a clamp or
    mask applied through `.data` to a module's output), the forward pass sees the edit and the
    backward pass does not: gradients flow as if it had not happened (a straight-through edit,
    sometimes deliberate). Writes between steps (after
    `optimizer.step()`, in EMA or weight-clipping code) are harmless, which is why the message
    says the write is *invisible to autograd's check*, not that a gradient is wrong.

    Writes inside weight set-up functions (names containing `init`, `reset_parameters`, `convert`,
    `load` or `fuse`: `__init__`, `_init_weights`, `convert_checkpoint`, `load_tf_weights`,
    `fuse_bn`) are skipped by default, because no autograd graph exists when they run. To flag
    them too (to migrate to `torch.nn.init.*` / `torch.no_grad()`):

    ```toml
    [tool.torchlint.options.data-attribute-mutation]
    skip-initializers = false
    ```

    ## Why is this bad?
    `.data` returns a tensor that shares storage with the original but is detached from
    autograd, and in-place changes through it do not bump the version counter autograd uses to
    detect modified saved tensors. If the tensor was saved for backward (most weights are), the
    gradient is computed from the *new* values and is silently wrong. The same in-place write
    done under `torch.no_grad()` on the tensor itself is tracked: torch raises
    `one of the variables needed for gradient computation has been modified by an inplace
    operation` instead of returning a wrong gradient.

    ## Example
    ```python
    for x, y in loader:
        loss = criterion(model(x), y)
        for p in model.parameters():
            p.data.clamp_(-0.01, 0.01)  # the graph of `loss` saved these weights
        loss.backward()
    ```

    ## Use instead
    ```python
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        with torch.no_grad():
            for p in model.parameters():
                p.clamp_(-0.01, 0.01)  # after the step: no graph holds them
    ```

    ## Fix safety
    Unsafe (applied with `--unsafe-fixes`). A call statement on a line of its own,
    `p.data.mul_(x)`, becomes `with torch.no_grad():` + `p.mul_(x)`. The rewrite changes
    behaviour exactly where the old code was silently wrong: under `no_grad` the in-place write
    bumps the version counter, so a tensor saved for backward now raises instead of producing a
    wrong gradient. Assignments (`p.data = ...`, `p.data -= ...`) and calls sharing a line with
    other code are not rewritten; review those by hand.

    ## References
    - [PyTorch 0.4 migration guide: what about .data?](https://pytorch.org/blog/pytorch-0_4_0-migration-guide/)
    - [Autograd mechanics: in-place operations](https://pytorch.org/docs/stable/notes/autograd.html#in-place-operations-with-autograd)
    """

    code = "TL102"
    name = "data-attribute-mutation"
    summary = "In-place write through `.data` bypasses autograd"
    severity = "warning"
    default_enabled = False
    tags = ("correctness", "autograd")
    requires_text = ('.data',)
    options = {
        "skip-initializers": Option(
            bool, True,
            "Stay silent inside weight set-up functions (names containing `init`, `reset_parameters`, "
            "`convert`, `load`, `fuse`): no autograd graph exists when they run."),
    }
    evidence = Evidence(probe=probe_data_attribute_mutation, slice="data-write-before-backward",
                        judge=judge_data_attribute_mutation, runtime=run_verdict, monitor=DataWriteMonitor)

    def _in_initializer(self, ctx: FileContext) -> bool:
        if not self.settings["skip-initializers"]:
            return False
        for fn in ctx.functions:
            name = getattr(fn, "name", "").lower()
            if any(part in name for part in _SETUP_NAME_PARTS):
                return True
        return False

    def _violation(self, data: ast.Attribute, target: Optional[ast.AST] = None) -> Violation:
        where = "in forward()" if getattr(self.ctx.function, "name", "") == "forward" \
            else "before backward()"
        kind = DataSwap if isinstance(target, ast.Attribute) else DataWrite
        return kind(data=dotted(data), where=where)

    def _known_tensor(self, receiver: ast.AST, ctx: FileContext) -> bool:
        """Only tensors whose `.data` is Tensor.data: not `p.grad` (never saved for
        backward), and not an object that merely has a `data` field (a namedtuple)."""
        if isinstance(receiver, ast.Attribute) and receiver.attr == "grad":
            return False
        if isinstance(receiver, ast.Name):
            if receiver.id in _NOT_TENSORS:
                return False
            value = ctx.value_before(receiver, receiver.lineno)  # `g = p.grad; g.data.mul_(...)`
            if isinstance(value, ast.Attribute) and value.attr in ("grad", "data") \
                    and (value.attr == "grad" or _is_grad(value.value)):
                return False
        return inference.kind_of(receiver, ctx) in (inference.TENSOR, inference.PARAMETER)

    def setup(self, ctx: FileContext) -> None:
        self._lines: set[int] = set()  # one finding per line: `p.data = p.data.clamp_(...)`

    def _at_risk(self, data: ast.Attribute, ctx: FileContext) -> bool:
        """A write can corrupt a gradient only while a graph that saved the tensor is alive:
        between a forward and its backward, or inside forward() (see training_step)."""
        return data.lineno not in self._lines and self._known_tensor(data.value, ctx) \
            and not self._in_initializer(ctx) and in_forward_backward_window(ctx, data.lineno)

    def _report(self, data: ast.Attribute, violation: Violation, **kwargs) -> None:  # type: ignore[no-untyped-def]
        self._lines.add(data.lineno)
        self.report(data, violation, **kwargs)

    def _check_store(self, target: ast.AST, ctx: FileContext, op: str, value: Optional[ast.AST] = None) -> None:
        data = _data_receiver(target)
        if data is None or (value is not None and _same_tensor_converted(data, value)):
            return
        if self._at_risk(data, ctx):
            self._report(data, self._violation(data, target if op == "=" else None), params={"op": op})

    def visit_Assign(self, node: ast.Assign, ctx: FileContext) -> None:
        for target in node.targets:
            self._check_store(target, ctx, "=", node.value)

    def visit_AugAssign(self, node: ast.AugAssign, ctx: FileContext) -> None:
        op = _AUG_OPS.get(type(node.op), "op=")
        self._check_store(node.target, ctx, op)

    def visit_Call(self, node: ast.Call, ctx: FileContext) -> None:
        func = node.func
        if not isinstance(func, ast.Attribute):
            return
        method = func.attr
        if not method.endswith("_") or method.startswith("_") or method in _METADATA_ONLY:
            return
        data = _data_receiver(func.value)
        if data is None or not self._at_risk(data, ctx):
            return
        self._report(data, self._violation(data), params={"op": method}, fix=_no_grad_fix(node, data, ctx))


def _is_grad(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "grad"


def _same_tensor_converted(data: ast.Attribute, value: ast.AST) -> bool:
    """`p.data = p.data.float()` / `p.data = p.to(dtype)`: the same values in another
    dtype, device or layout, kept in the same Parameter (an fp32 upcast)."""
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
            and value.func.attr in _CONVERSIONS):
        return False
    base = value.func.value
    wanted = ast.dump(data.value)
    return ast.dump(base) == wanted or (isinstance(base, ast.Attribute) and base.attr == "data"
                                        and ast.dump(base.value) == wanted)


def _no_grad_fix(call: ast.Call, data: ast.Attribute, ctx: FileContext):  # type: ignore[no-untyped-def]
    """`p.data.mul_(x)` as a statement of its own -> `with torch.no_grad():` + `p.mul_(x)`."""
    statement = ctx.parent
    if not isinstance(statement, ast.Expr) or statement.value is not call:
        return None
    parent = ctx.parents[-2] if len(ctx.parents) > 1 else None
    if parent is None or not any(statement in getattr(parent, f, ()) for f in ("body", "orelse", "finalbody")):
        return None
    torch = module_alias(ctx.imports.aliases, "torch")
    if torch is None:
        return None
    source = ctx.source
    row, col = start_of(source, statement)
    end_row, end_col = end_of(source, statement)
    indent, after = source.line(row)[:col - 1], source.line(end_row)[end_col - 1:]
    text = text_of(source, statement)
    if indent.strip() or (after.strip() and not after.lstrip().startswith("#")) or has_comment(text):
        return None  # shares its line with other code (`if x: ...`, `a; b`): left alone
    step = "\t" if indent.startswith("\t") else "    "
    receiver = text_of(source, data.value)
    rest = text[len(text_of(source, data)):]
    if not text.startswith(text_of(source, data)):
        return None
    body = (receiver + rest).replace("\n", "\n" + step)
    return make_fix(f"Write in place under `{torch}.no_grad()`",
                    [edit((row, col), (end_row, end_col), f"with {torch}.no_grad():\n{indent}{step}{body}")], UNSAFE)
