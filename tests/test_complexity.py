"""Every rule stays near-linear on adversarial inputs, and the per-file CPU budget turns a
file that is still too slow into one TL000 finding.

Work is counted deterministically: the number of Python and C function calls made while a
file is linted (sys.setprofile), not wall time. Growing an input 1x/2x/4x/8x must grow the
count by well under 16x at 8x; a quadratic path (TL206 over 2,000 attributes, TL207 in a
1,200-branch elif chain) grows it by ~64x."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

from torchlint.checker import check_file
from torchlint.config import CliOverrides, ConfigError, Settings, settings_from_table
from torchlint.notebook import lint_notebook
from torchlint import catalog

HEADER = ("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
          "from torch.autograd import Variable\nfrom torch.utils.data import DataLoader\n")
# One training step touching most rules' triggers (a line each, so it can be indented anywhere).
STEP = [
    "model.cuda()", "out = model(batch)", "loss = F.cross_entropy(F.softmax(out), batch)", "loss.backward()",
    "opt.step()", "total = total + loss", "x.data.add_(1)", "y = x.float().cuda()", "torch.cuda.synchronize()",
    "print(loss.item())", "dl = DataLoader(ds, num_workers=2, shuffle=True, sampler=s)", "torch.load(path)",
    "torch.save(model, path)", "z = torch.FloatTensor(3)", "v = Variable(x, volatile=True)",
    "x = torch.zeros(1).to('cuda')", "p = F.dropout(x)", "m = nn.CrossEntropyLoss(size_average=True)",
]


def _lines(indent: str) -> str:
    return "".join(f"{indent}{line}\n" for line in STEP)


def flat_function(n: int) -> str:
    """One function, the same names bound and read n times."""
    return HEADER + "def train(model, opt, loader, ds, x, s, path, total):\n" + _lines("    ") * n


def rebound_name(n: int) -> str:
    """One tensor name bound and read n times (every read used to re-infer every binding)."""
    return HEADER + "def f():\n" + "    x = torch.zeros(1).cuda().float()\n    y = x.cuda(); x.data.mul_(2)\n" * n


def many_functions(n: int) -> str:
    return HEADER + "".join(f"def train{i}(model, opt, loader, ds, x, s, path, total):\n"
                            f"    for batch in loader:\n{_lines('        ')}" for i in range(n))


def module_attributes(n: int) -> str:
    """One nn.Module with n tensor attributes, each read in forward (TL206 was quadratic)."""
    init = "".join(f"        self.a{i} = torch.zeros({i})\n" for i in range(n))
    uses = "".join(f"        x = x + self.a{i}.to(x.device)\n        self.m{i}.train()\n" for i in range(n))
    return HEADER + (f"class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n{init}"
                     f"    def forward(self, x):\n{uses}        return x\n")


def elif_chain(n: int) -> str:
    """n nested Ifs in the tree (TL207 was quadratic)."""
    body = "def f(model, opt, batch, ds, x, s, path, total, k):\n    if k == 0:\n        pass\n"
    for i in range(n):
        body += f"    elif k == {i + 1}:\n        " + "; ".join(STEP) + "\n"
    return HEADER + body


def big_loop(n: int) -> str:
    """One training loop whose body holds n steps (TL802 and TL303 rescanned it per call)."""
    return HEADER + "def f(model, opt, loader, ds, x, s, path, total):\n    for batch in loader:\n" + _lines("        ") * n


def elif_in_loop(n: int) -> str:
    """An n-branch elif chain inside a loop, in a module's method (parents n deep)."""
    body = "class M(nn.Module):\n    def f(self, model, opt, loader, ds, x, s, path, total, k):\n" \
        "        for batch in loader:\n            if k == 0:\n                pass\n"
    for i in range(n):
        body += f"            elif k == {i + 1}:\n                " + "; ".join(STEP) + "\n"
    return HEADER + body


def method_chain(n: int) -> str:
    return HEADER + "y = x" + ".float().cuda().to('cuda').double()" * n + "\nz = torch" + ".a" * n + "(x)\n"


def long_expressions(n: int) -> str:
    items = ", ".join(f"torch.zeros({i}).cuda()" for i in range(n))
    return HEADER + (f"a = [{items}]\nb = " + " + ".join(["x.cuda()"] * n) + "\nc = "
                     + " if k else ".join(["x.cuda()"] * n) + "\nif " + " < ".join(["x.cuda()"] * n) + ":\n    pass\n")


def many_loops(n: int) -> str:
    nested = "".join(f"{'    ' * (d + 1)}for b{d} in loader:\n" for d in range(8))
    return HEADER + "def f(model, opt, loader, ds, x, s, path, total, batch):\n" + \
        (nested + _lines("    " * 9)) * n


def aliases_and_imports(n: int) -> str:
    imports = "".join(f"import torch as t{i}\nfrom torch import nn as n{i}\n" for i in range(n))
    uses = "".join(f"    import torch as u{i}\n    t{i}.load(x); n{i}.functional.softmax(x); u{i}.FloatTensor(3)\n"
                   for i in range(n))
    return HEADER + imports + "def f(x):\n" + uses


def noqa_lines(n: int) -> str:
    return HEADER + "".join(f"x{i} = torch.FloatTensor({i})  # noqa: TL205, TL101, TL999\n" for i in range(n))


SHAPES: dict[str, tuple[Callable[[int], str], int]] = {  # generator, size at 1x
    "flat_function": (flat_function, 4),
    "rebound_name": (rebound_name, 30),
    "many_functions": (many_functions, 3),
    "module_attributes": (module_attributes, 24),
    "elif_chain": (elif_chain, 10),
    "big_loop": (big_loop, 4),
    "elif_in_loop": (elif_in_loop, 8),
    "method_chain": (method_chain, 32),
    "long_expressions": (long_expressions, 40),
    "many_loops": (many_loops, 1),
    "aliases_and_imports": (aliases_and_imports, 12),
    "noqa_lines": (noqa_lines, 24),
}
# Only the ends decide (the ratio is 8x against 1x); the sizes between cost as much again under
# the profiler, across every rule and shape, and told nothing the ends do not.
GROWTH = (1, 8)
MAX_RATIO = 16  # at 8x; linear is ~8, quadratic ~64


def count_calls(fn: Callable[[], object]) -> int:
    calls = 0

    def profile(frame: object, event: str, arg: object) -> None:
        nonlocal calls
        if event in ("call", "c_call"):
            calls += 1

    gc.collect()  # a collection inside the count would add the finalizers of earlier trees
    gc.disable()
    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
        gc.enable()
    return calls


def costs(lint: Callable[[bytes], object], generate: Callable[[int], str], base: int) -> list[int]:
    sources = [generate(base * g).encode() for g in GROWTH]
    lint(sources[0])  # warm caches (lru_cache'd tables, imports) outside the count
    return [count_calls(lambda src=src: lint(src)) for src in sources]  # type: ignore[misc]


def _ratio(counts: list[int]) -> float:
    return counts[-1] / max(counts[0], 1)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_shapes_parse(shape: str) -> None:
    import ast

    generate, base = SHAPES[shape]
    ast.parse(generate(base * GROWTH[-1]))  # a shape that does not parse would measure nothing


@pytest.mark.parametrize("rule", catalog.static_rules(), ids=lambda r: r.code)
def test_every_rule_is_near_linear(rule: type) -> None:
    for shape, (generate, base) in SHAPES.items():
        counts = costs(lambda data: check_file("x.py", data, [rule]), generate, base)
        assert counts == sorted(counts), (shape, counts)
        assert _ratio(counts) < MAX_RATIO, f"{rule.code} on {shape}: work grew {_ratio(counts):.1f}x for 8x input {counts}"


def test_all_rules_together_are_near_linear() -> None:
    for shape, (generate, base) in SHAPES.items():
        counts = costs(lambda data: check_file("x.py", data, list(catalog.static_rules())), generate, base)
        assert _ratio(counts) < MAX_RATIO, f"{shape}: work grew {_ratio(counts):.1f}x for 8x input {counts}"


def test_notebook_with_many_cells_is_near_linear() -> None:
    def notebook(n: int) -> str:
        cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                "source": [line + "\n" for line in HEADER.splitlines() + STEP]}
        return json.dumps({"cells": [cell] * n, "metadata": {"language_info": {"name": "python"}},
                           "nbformat": 4, "nbformat_minor": 5})

    counts = costs(lambda data: lint_notebook("x.ipynb", data, list(catalog.static_rules())), notebook, 10)
    assert _ratio(counts) < MAX_RATIO, counts


def test_the_measure_catches_a_quadratic_path() -> None:
    """The bound is not vacuous: a deliberately quadratic loop over the same inputs fails it."""
    def quadratic(data: bytes) -> None:
        lines = data.splitlines()
        for line in lines:
            for other in lines:
                len(other)

    counts = costs(quadratic, module_attributes, 40)
    assert _ratio(counts) > MAX_RATIO


def test_per_file_ignores_match_once_per_code_group() -> None:
    """Many patterns ignoring the same codes cost one combined regex per file, and the result
    is the union of what each pattern ignores, as before."""
    patterns = {f"gen{i}/*.py": ["TL1"] for i in range(2000)}
    patterns["tests/**"] = ["TL205", "TL9"]
    patterns["*_test.py"] = ["ALL"]
    settings = settings_from_table(None, {"per-file-ignores": patterns, "select": ["ALL"]}, CliOverrides(), Path("/r"))
    assert len(settings._per_file) == 3
    codes = settings.codes_for(Path("/r/gen1999/a.py"))
    assert not any(c.startswith("TL1") for c in codes) and "TL205" in codes
    codes = settings.codes_for(Path("/r/tests/x/a.py"))
    assert "TL205" not in codes and "TL901" not in codes and "TL101" in codes
    assert settings.codes_for(Path("/r/src/a_test.py")) == frozenset()
    assert settings.codes_for(Path("/r/src/a.py")) == settings.enabled


def test_per_file_ignores_with_more_code_sets_than_codes() -> None:
    enabled = Settings(Path("/r"), enabled=frozenset({"TL101", "TL102"})).enabled
    pfi = tuple((f"d{i}/*", frozenset({"TL101"} if i % 2 else {"TL102"} if i % 3 else {"TL101", "TL102"}))
                for i in range(6))
    settings = Settings(Path("/r"), enabled=enabled, per_file_ignores=pfi)
    assert settings.codes_for(Path("/r/d1/a.py")) == {"TL102"}
    assert settings.codes_for(Path("/r/d2/a.py")) == {"TL101"}
    assert settings.codes_for(Path("/r/d0/a.py")) == frozenset()


# -- the per-file CPU budget ---------------------------------------------------------------

def _slow_file(tmp_path: Path) -> Path:
    path = tmp_path / "slow.py"
    path.write_text(flat_function(400))
    return path


def _check(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "torchlint", "check", "--output-format", "json", *args],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)


def test_a_file_past_lint_timeout_is_one_tl000_finding_jobs_1_and_n_cold_and_warm(tmp_path: Path) -> None:
    _slow_file(tmp_path)
    for i in range(40):  # enough files for --jobs 2 to use worker processes
        (tmp_path / f"ok{i}.py").write_text("import torch\nx = torch.FloatTensor(3)\n")
    outputs = []
    for args in (["--jobs", "1", "--no-cache"], ["--jobs", "2", "--no-cache"], ["--jobs", "2"], ["--jobs", "1"]):
        proc = _check(tmp_path, "--lint-timeout", "0.05", "--extend-select", "TL205", *args)
        assert proc.returncode == 1, proc.stderr
        outputs.append(proc.stdout)
    assert len(set(outputs)) == 1  # identical across jobs and a cold and a warm cache
    findings = json.loads(outputs[0])
    slow = [f for f in findings if f["filename"].endswith("slow.py")]
    assert [(f["code"], f["location"]["row"]) for f in slow] == [("TL000", 1)]
    assert "more than 0.05 s of CPU time" in slow[0]["message"] and "skipped" in slow[0]["message"]
    assert len(findings) == 41  # the other files are linted as usual
    # With a normal budget the same file is linted (the timed-out result was not cached).
    proc = _check(tmp_path, "slow.py", "--extend-select", "TL205")
    assert proc.returncode == 1 and "TL000" not in proc.stdout and "TL205" in proc.stdout


def test_a_timed_out_file_fails_the_run_even_when_tl000_is_not_selected(tmp_path: Path) -> None:
    _slow_file(tmp_path)
    proc = _check(tmp_path, "--lint-timeout", "0.05", "--select", "TL205", "--no-cache")
    assert proc.returncode == 2 and "lint-timeout" in proc.stderr


def test_config_can_lower_lint_timeout_but_not_raise_it(tmp_path: Path) -> None:
    _slow_file(tmp_path)
    (tmp_path / "torchlint.toml").write_text("lint-timeout = 0.05\n")
    proc = _check(tmp_path, "--no-cache")
    assert proc.returncode == 1 and "TL000" in proc.stdout and "lint-timeout" in proc.stdout
    (tmp_path / "torchlint.toml").write_text("lint-timeout = 1e12\n")
    proc = _check(tmp_path, "--no-cache")
    assert proc.returncode == 2 and "can only lower" in proc.stderr and "Traceback" not in proc.stderr
    # The command line may raise it (and then the config file's value is not used).
    proc = _check(tmp_path, "--no-cache", "--lint-timeout", "600", "--extend-select", "TL205")
    assert proc.returncode == 1 and "TL000" not in proc.stdout and "TL205" in proc.stdout
    with pytest.raises(ConfigError, match="at least"):
        settings_from_table(None, {"lint-timeout": 0}, CliOverrides(), tmp_path)
    assert settings_from_table(None, {"lint-timeout": 1e12}, CliOverrides(lint_timeout=1e12), tmp_path).lint_timeout \
        == 1e12


def test_budget_stops_a_slow_handler_and_the_thread_fallback(tmp_path: Path) -> None:
    """The timer signal stops work inside one rule handler; off the main thread the walker's
    CPU-clock check stops the walk."""
    import threading

    from torchlint.budget import LintTimeout, cpu_budget

    with pytest.raises(LintTimeout):
        with cpu_budget(0.05):
            while True:
                pass
    outcome: list[str] = []

    def lint_in_thread() -> None:
        try:
            with cpu_budget(0.05):
                check_file("x.py", flat_function(400).encode(), list(catalog.static_rules()))
            outcome.append("finished")
        except LintTimeout:
            outcome.append("timed out")

    thread = threading.Thread(target=lint_in_thread)
    thread.start()
    thread.join(120)
    assert outcome == ["timed out"]


def test_work_paused_off_the_budget_is_not_charged_to_it() -> None:
    """A rule module's first import (budget.paused) must not count against the file that
    happens to wake the rule first; the budget still runs out once the body resumes."""
    import threading
    import time

    from torchlint.budget import LintTimeout, cpu_budget, paused

    def spin(seconds: float) -> None:
        end = time.thread_time() + seconds
        while time.thread_time() < end:
            pass

    with cpu_budget(0.1):
        with paused():
            spin(0.3)  # three budgets' worth, off the clock
            with paused():  # nested (a rule module importing another): still off the clock
                spin(0.05)
            spin(0.15)
        spin(0.02)
    with pytest.raises(LintTimeout):
        with cpu_budget(0.1):
            with paused():
                spin(0.05)
            while True:
                pass
    outcome: list[str] = []

    def fallback_clock() -> None:  # off the main thread: the walker's deadline check
        from torchlint import budget

        with cpu_budget(0.1):
            with paused():
                spin(0.3)
            budget.check()
            outcome.append("within budget")

    thread = threading.Thread(target=fallback_clock)
    thread.start()
    thread.join(60)
    assert outcome == ["within budget"]
