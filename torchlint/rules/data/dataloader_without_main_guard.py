"""TL302: worker processes started by module-level code outside `if __name__ == "__main__":`."""

from __future__ import annotations

import ast

from torchlint.analysis.scopes import iter_scope
from torchlint.analysis.torch_api import DATALOADER
from torchlint.analysis.dataloader import iterated, nonzero_workers
from torchlint.checker import FileContext
from torchlint.rules.base import Evidence, Rule, Violation, keyword, literal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Mapping, Optional

_START_METHODS = ("fork", "spawn", "forkserver")
_SET_START_METHOD = ("multiprocessing.set_start_method", "torch.multiprocessing.set_start_method")


def is_main_guard(node: ast.AST) -> bool:
    if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
        return False
    parts = [node.test.left, *node.test.comparators]
    return any(isinstance(p, ast.Name) and p.id == "__name__" for p in parts) and any(
        isinstance(p, ast.Constant) and p.value == "__main__" for p in parts)


# -- evidence (runs only in the --verify worker: see CONTRIBUTING.md) ----------------------
def probe_main_guard(params: dict, device: str) -> tuple[str, str]:
    import os
    import subprocess
    import sys
    import tempfile

    # The start method the flagged code pins (the loader's context, else the module's
    # set_start_method); unpinned, spawn: the default on macOS and Windows.
    pinned = params.get("context") or params.get("start_method")
    method = pinned if pinned in ("fork", "spawn", "forkserver") else "spawn"
    workers = params.get("num_workers")  # the loader's literal num_workers; absent: not known
    if type(workers) is not int:
        return "skipped", "the loader's num_workers is not a literal here: whether it starts workers is not known"
    if workers <= 0:
        return ("not-reproduced", f"num_workers={workers}: the loader starts no worker process, so nothing re-imports "
                                  "the main module")
    if method == "fork" and not sys.platform.startswith("linux"):
        return "skipped", "the code pins the fork start method, which this platform does not offer safely"
    script = (
        "from torch.utils.data import DataLoader\n"
        f"for _ in DataLoader(list(range(4)), num_workers={min(workers, 2)}, multiprocessing_context={method!r}):\n"
        "    pass\n"
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "unguarded.py")
        with open(path, "w") as fh:
            fh.write(script)
        proc = subprocess.run([sys.executable, "-I", path], capture_output=True, text=True, timeout=120, cwd=tmp)
    how = f"the {method} start method, which the code pins" if pinned else f"the {method} start method (the default " \
        "on macOS and Windows; the code pins none)"
    how += f", num_workers={workers}" + (" (capped at 2)" if workers > 2 else "")
    if "bootstrapping phase" in proc.stderr:
        return "confirmed", f"an unguarded module-level loop over a multi-worker DataLoader, with {how}: " \
                            "RuntimeError: An attempt has been made to start a new process before the current " \
                            "process has finished its bootstrapping phase"
    if proc.returncode == 0:
        return "not-reproduced", f"an unguarded module-level loop over a multi-worker DataLoader ran (exit 0) " \
                                 f"with {how}: forked workers do not re-import the main module"
    raise RuntimeError(f"the unguarded script exited {proc.returncode}: {proc.stderr.strip()[-300:]}")


class WorkersStartedAtImport(Violation):
    helper: Optional[str] = None  # the module-level call of a function that starts them, if any
    help = 'Move it under `if __name__ == "__main__":`'

    def message(self) -> str:
        what = f"calls `{self.helper}()`, which starts DataLoader workers" if self.helper else "starts DataLoader workers"
        return f"Module-level code {what}: fails under the spawn start method"


class DataloaderWithoutMainGuard(Rule):
    """## What it does
    Flags module-level code outside `if __name__ == "__main__":` that iterates a `DataLoader`
    whose `num_workers` is not literally 0, or calls a function (directly or through other
    functions of the file) that builds and iterates such a loader, or reads a module-level one.
    Reported at the loop or call, once per top-level statement. Notebooks (`.ipynb`) are not
    checked: a kernel's `__main__` is never re-imported by spawned workers.

    ## Why is this bad?
    With the `spawn` start method (the default on Windows and macOS) every worker process
    re-imports the main module. Unguarded module-level code then starts workers again from inside
    a worker, and Python stops it with `RuntimeError: An attempt has been made to start a new
    process before the current process has finished its bootstrapping phase.` The same script
    works on Linux (fork), so the bug ships.

    ## Example
    ```python
    loader = DataLoader(ds, num_workers=4)
    for batch in loader:
        train_step(batch)
    ```

    ## Use instead
    ```python
    def main():
        loader = DataLoader(ds, num_workers=4)
        for batch in loader:
            train_step(batch)

    if __name__ == "__main__":
        main()
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [torch.utils.data](https://pytorch.org/docs/stable/data.html)
    - [multiprocessing: safe importing of main module](https://docs.python.org/3/library/multiprocessing.html#the-spawn-and-forkserver-start-methods)
    """

    code = "TL302"
    name = "dataloader-without-main-guard"
    summary = "Multi-worker DataLoader iterated by module-level code without a __main__ guard"
    severity = "warning"
    tags = ("portability", "data-loading")
    requires_text = ('DataLoader',)
    evidence = Evidence(probe=probe_main_guard,
                        crash=r"An attempt has been made to start a new process before")

    def end_file(self, ctx: FileContext) -> None:
        if ctx.source.path.endswith(".ipynb"):
            return  # a kernel's __main__ is never re-imported by spawned workers
        module_stmts = [s for s in ctx.tree.body if not is_main_guard(s)]
        reported: set[int] = set()  # one finding per unguarded statement
        functions = {s.name: s for s in ctx.tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
        # Names bound at module level to a multi-worker DataLoader.
        loaders = self._worker_loaders(module_stmts, ctx)
        self._start_method = self._module_start_method(module_stmts, ctx)
        self._loader_calls = {t.id: s.value for s in module_stmts if isinstance(s, ast.Assign)
                              for t in s.targets if isinstance(t, ast.Name) and t.id in loaders}
        for stmt in module_stmts:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            for node in iter_scope([stmt]):
                it = iterated(node)
                if it is not None and self._is_worker_loader(it, loaders, ctx):
                    # A comprehension's `for` clause has no position of its own: point at its iterable.
                    call = self._loader_calls.get(it.id) if isinstance(it, ast.Name) else it
                    self._report(it if isinstance(node, ast.comprehension) else node,
                                 WorkersStartedAtImport(), self._context(call, ctx), call)
                    reported.add(id(stmt))
                    break
        spawning = self._spawning_functions(functions, loaders, ctx)
        for stmt in module_stmts:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or id(stmt) in reported:
                continue
            for node in iter_scope([stmt]):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in spawning:
                    self._report(node, WorkersStartedAtImport(helper=node.func.id))
                    break

    def _report(self, node: ast.AST, violation: WorkersStartedAtImport, context: object = None, call: object = None) -> None:
        # Facts for --verify: the start method the loader or the module pins, and the loader's
        # num_workers, when a literal says so.
        workers = nonzero_workers(call) if isinstance(call, ast.Call) else None
        self.report(node, violation,
                    params={"context": context, "start_method": self._start_method,
                            "num_workers": workers if type(workers) is int else None})

    @staticmethod
    def _module_start_method(stmts: list[ast.stmt], ctx: FileContext) -> object:
        method = None
        for node in iter_scope(stmts):
            if isinstance(node, ast.Call) and ctx.call_name(node) in _SET_START_METHOD and node.args:
                method = literal(node.args[0])
        return method if method in _START_METHODS else None

    @staticmethod
    def _context(call: object, ctx: FileContext) -> object:
        """`multiprocessing_context="fork"` or `=multiprocessing.get_context("fork")`, as "fork"."""
        kw = keyword(call, "multiprocessing_context") if isinstance(call, ast.Call) else None
        value = kw.value if kw is not None else None
        if isinstance(value, ast.Call) and (ctx.call_name(value) or "").endswith("get_context") and value.args:
            value = value.args[0]
        method = literal(value) if value is not None else None
        return method if method in _START_METHODS else None

    def _worker_loaders(self, stmts: list[ast.stmt], ctx: FileContext) -> set[str]:
        names: set[str] = set()
        for node in iter_scope(stmts):
            if isinstance(node, ast.Assign) and ctx.call_name(node.value) == DATALOADER \
                    and nonzero_workers(node.value) is not None:  # type: ignore[arg-type]
                names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        return names

    def _is_worker_loader(self, it: ast.AST, loaders: set[str], ctx: FileContext) -> bool:
        if isinstance(it, ast.Name):
            return it.id in loaders
        return isinstance(it, ast.Call) and ctx.call_name(it) == DATALOADER and nonzero_workers(it) is not None

    def _spawning_functions(self, functions: Mapping[str, ast.AST], module_loaders: set[str],
                            ctx: FileContext) -> set[str]:
        direct = set()
        calls: dict[str, set[str]] = {}
        for name, fn in functions.items():
            body = fn.body  # type: ignore[attr-defined]
            # Its own loaders, and module-level ones it reads without rebinding the name.
            loaders = self._worker_loaders(body, ctx) | {n for n in module_loaders
                                                         if not ctx.is_local(n, fn)}  # type: ignore[arg-type]
            callees = set()
            for node in iter_scope(body):
                it = iterated(node)
                if it is not None and self._is_worker_loader(it, loaders, ctx):
                    direct.add(name)
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in functions:
                    callees.add(node.func.id)
            calls[name] = callees
        spawning = set(direct)
        changed = True
        while changed:  # functions that call a spawning function spawn too
            changed = False
            for name, callees in calls.items():
                if name not in spawning and callees & spawning:
                    spawning.add(name)
                    changed = True
        return spawning
