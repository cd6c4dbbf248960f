"""The allow-list pre-filter of `--verify` (torchlint/verify/safety.py, issue 16 point 3):
each bypass class of issue 16 is refused before anything runs, and what ordinary slices do
still passes. The pre-filter is not the security boundary (the worker's sandbox is); these
tests check the pre-filter alone, without torch."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from torchlint.verify import safety
from torchlint.verify.safety import Unsafe, Validator

ROOT = Path(__file__).resolve().parents[1]


def _check(body: str) -> None:
    Validator().check(ast.parse("import torch\nimport numpy as np\n" + body + "\n"))


BYPASSES = {
    # aliases and first-class uses of reflective builtins
    "alias of getattr": "g = getattr\nt = g(torch, 'ones')(3)",
    "getattr handed to map": "t = list(map(getattr, [torch], ['ones']))",
    "getattr in a container": "t = [getattr][0](torch, 'ones')",
    "getattr as a default": "def f(g=getattr):\n    return g(torch, 'ones')",
    "getattr through a walrus": "t = (g := getattr)",
    "setattr as a value": "s = setattr",
    "hasattr as a key": "t = sorted([torch], key=hasattr)",
    "type as a value": "t = list(map(type, [1]))",
    "super as a value": "s = super",
    "vars as a value": "t = vars",
    "partial of getattr": "t = torch.utils.data.dataloader.functools.partial(getattr, torch)",
    # keyword and star tricks
    "getattr with star args": "t = getattr(*[torch, 'ones'])",
    "getattr with a starred name": "t = getattr(torch, *['ones'])",
    "getattr with keywords": "t = getattr(torch, **{'name': 'ones'})",
    "three-argument type": "A = type('A', (object,), {})",
    "type with keywords": "A = type(1, **{})",
    "a metaclass": "class M(object):\n    pass\nclass A(metaclass=M):\n    pass",
    "getattr of a reachable module name": "t = getattr(torch.utils.data.dataloader, 'functools')",
    "getattr of a computed-looking name": "t = getattr(torch, 'on es')",
    # module attributes reached through chains
    "multiprocessing through dataloader": "t = torch.utils.data.dataloader.python_multiprocessing.get_context('spawn')",
    "multiprocessing as mp": "t = torch.cuda.tunable.mp.Process",
    "functools through a chain": "t = torch.utils.data.dataloader.functools.reduce",
    "functools through a value": "m = torch.utils.data.dataloader\nt = m.functools",
    "the real builtins": "t = torch.textwrap.re.enum.bltns",
    "cython func_globals": "t = np.random.Philox.advance.func_globals",
    "typing via a chain": "t = torch.ao.nn.quantized.reference.modules.utils.typing",
    "a logger": "t = torch.utils.data.dataloader.logger",
    "ctypes pointers": "t = torch.xpu.pointer",
    "a module passed as self": "class A:\n    def f(self):\n        return self.functools\nt = A.f(torch.utils.data.dataloader)",
    "import of a reachable module": "from torch.utils.data.dataloader import functools",
    "import of a private name": "from torch.nn.modules import _functions",
    "import of multiprocessing by another name": "from torch.cuda.tunable import mp",
    # functions that evaluate strings, and string annotations they would evaluate
    "get_type_hints via typing": "t = torch.ao.nn.quantized.reference.modules.utils.typing.get_type_hints",
    "singledispatch via functools": "t = torch.utils.data.dataloader.functools.singledispatch",
    "inspect.signature": "t = torch.ao.quantization.utils.signature",
    "dataclasses": "t = torch.ao.quantization.observer.dataclass",
    "a string annotation": "def f(x: 'os.system'):\n    return x",
    "a string return annotation": "def f(x) -> 'os':\n    return x",
    "an annotation bound to a string": "S = 'os.system'\ndef f(x: S):\n    return x",
    "an annotation built by a call": "def f(x: str.join('', ['o', 's'])):\n    return x",
    "an f-string annotation": "n = 1\ndef f(x: f'{n}'):\n    return x",
    "a variable annotation string": "x: 'os' = 1",
    "ForwardRef._evaluate": "t = torch.ao.nn.quantized.reference.modules.utils.typing.ForwardRef('x')._evaluate",
    "attrgetter": "t = torch.nn.modules.container.operator.attrgetter('sys')",
    "str.format field access": "t = '{0.sys}'.format(torch)",
    "format_map": "t = '{x}'.format_map({'x': 1})",
    "pickle": "t = torch.serialization.pickle",
    # writes to imported modules
    "monkeypatching torch": "torch.nn.functional.relu = abs",
    "deleting from torch": "del torch.nn.functional.relu",
    "setattr on torch": "setattr(torch, 'ones', abs)",
}


@pytest.mark.parametrize("name", sorted(BYPASSES))
def test_each_bypass_form_is_refused_by_the_prefilter(name):
    with pytest.raises(Unsafe):
        _check(BYPASSES[name])


HARMLESS = [
    "t = getattr(torch, 'ones')(3)",
    "x = torch.ones(3)\nt = hasattr(x, 'grad')",
    "x = torch.ones(3)\nt = type(x)",
    "class A(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.cache = {}\n"
    "        self._step = 0\n        self.layer = torch.nn.Linear(2, 2)\n    @property\n    def size(self):\n"
    "        return 2\n    @size.setter\n    def size(self, v):\n        self._step = v",
    "def f(x: torch.Tensor, n: int = 2) -> torch.Tensor | None:\n    return x * n",
    "from torch import Tensor\ndef f(x: Tensor) -> list[Tensor]:\n    return [x]",
    "y: int = 3",
    "from torch.utils.data import DataLoader, Dataset\nd = DataLoader([1, 2], batch_size=1)",
    "import torch.nn.functional as F\nt = F.log_softmax(torch.ones(2), dim=0).log().size()",
    "t = np.add.reduce(np.ones(3)) + np.ones(2).copy().sum()",
    "t = torch.ones(2).to(torch.float64).type(torch.float32).data.cpu().float()",
    "x = np.random.default_rng(0).normal(size=3)",
]


@pytest.mark.parametrize("body", HARMLESS)
def test_ordinary_slice_code_passes_the_prefilter(body):
    _check(body)


def test_the_verify_cases_still_pass_the_prefilter():
    """Every flagged line of the held-out style verify cases (tests/fixtures/*/verify/, with a
    `# label:`) that ran as a slice before still does."""
    from torchlint.linter import FileTask, lint_task
    from torchlint import catalog
    from torchlint.verify.plan import plan

    codes = frozenset(r.code for r in catalog.static_rules())
    refused = []
    sliced = 0
    for path in sorted((ROOT / "tests" / "fixtures").glob("TL*/verify/*.py")):
        text = path.read_text(encoding="utf-8")
        if "# label:" not in text:
            continue
        for finding in lint_task(FileTask(path=str(path), display=path.name, codes=codes)).findings:
            request, _ = plan(finding, text)
            if request is not None and request.variants:
                sliced += 1
            elif request is not None and "not allowed to run" in request.not_self_contained:
                refused.append((path.name, finding.row, request.not_self_contained))
    assert not refused
    # As many as before the closure was added, less TL102 write_before_forward.py, which TL102
    # no longer reports (a write before the first forward; its verify case places the finding).
    assert sliced >= 47


# -- the data file -------------------------------------------------------------------------

def _data() -> dict:
    return json.loads(Path(safety.REACHABLE_DATA).read_text(encoding="utf-8"))


def test_the_data_file_is_well_formed_and_explains_each_name():
    data = _data()
    names = data["names"]
    assert len(names) > 100 and set(data["module_names"]) <= set(names)
    for name, why in names.items():
        assert name.isidentifier() and not name.startswith("_"), name
        path, reason = why.split(": ", 1)
        assert (path.startswith("<") or path.split(".")[0] in safety.ALLOWED_ROOTS) and reason, why
    # what the attacks went through is in it
    assert {"functools", "typing", "bltns", "mp", "python_multiprocessing", "func_globals"} <= set(names)
    # and what ordinary code uses on tensors and modules is not
    assert not {"size", "to", "type", "log", "data", "copy", "reduce", "utils", "nn", "functional"} & set(names)


def test_a_missing_data_file_refuses_every_slice(monkeypatch, tmp_path):
    monkeypatch.setattr(safety, "REACHABLE_DATA", str(tmp_path / "missing.json"))
    monkeypatch.setattr(safety, "_reachable", None)
    with pytest.raises(Unsafe, match="data file"):
        _check("t = torch.ones(3).size()")


def test_linting_never_imports_torch_for_the_prefilter():
    code = ("import sys, ast\nfrom torchlint.verify.safety import Validator\n"
            "Validator().check(ast.parse('import torch\\nt = torch.ones(3)'))\n"
            "assert 'torch' not in sys.modules and 'numpy' not in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT,
                   env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_the_data_file_is_consistent_with_the_installed_torch():
    """A shallow walk of the installed torch/numpy finds no name the data file lacks (the
    full walk is `python scripts/reachable_attributes.py --check`, run after upgrades)."""
    pytest.importorskip("torch")
    pytest.importorskip("numpy")
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "reachable_attributes.py"), "--check",
                           "--depth", "4"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
