"""The project index: names a file imports from other files of the project, resolved there
(base classes, helpers, factories, module-level loaders), and the cache entries that depend
on those files. Fixture projects live in tests/fixtures/projects/<name>/ with `# expect:`
comments, checked as a whole tree."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES, expected_findings
from torchlint import __version__, linter
from torchlint.analysis.project_index import ProjectIndex, module_name_of, relative_base
from torchlint.api import CheckRequest, check
from torchlint.config import CliOverrides
from torchlint.linter import FileTask, lint_task

PROJECTS = FIXTURES / "projects"
CASES = sorted(p.name for p in PROJECTS.iterdir() if p.is_dir())


def _expected(root: Path) -> set[tuple[str, int, str]]:
    return {(p.relative_to(root).as_posix(), row, code)
            for p in sorted(root.rglob("*.py")) for row, code in expected_findings(p)}


def _run(root: Path, codes: set[str], paths: list[str] | None = None, jobs: int = 1, no_cache: bool = True,
         monkeypatch: pytest.MonkeyPatch | None = None) -> list[tuple[str, int, str, str]]:
    if monkeypatch is not None:
        monkeypatch.chdir(root)
    report = check(CheckRequest(paths or ["."], overrides=CliOverrides(select=sorted(codes)), jobs=jobs,
                                no_cache=no_cache, cwd=root, warn_empty_directories=False))
    assert report.internal_errors == 0
    return [(f.path, f.row, f.code, f.message) for f in report.findings]


def _copy(name: str, tmp_path: Path) -> Path:
    root = tmp_path / name
    shutil.copytree(PROJECTS / name, root)
    return root


@pytest.mark.parametrize("name", CASES)
def test_project_fixture(name, tmp_path, monkeypatch):
    root = _copy(name, tmp_path)
    expected = _expected(root)
    assert expected, f"{name}: no `# expect:` comments"
    found = {(path, row, code) for path, row, code, _ in _run(root, {c for _, _, c in expected},
                                                             monkeypatch=monkeypatch)}
    assert found == expected, f"missed: {sorted(expected - found)}; false positives: {sorted(found - expected)}"


def test_every_fixture_project_has_near_misses():
    for name in CASES:
        text = "\n".join(p.read_text() for p in (PROJECTS / name).rglob("*.py"))
        assert "must stay silent" in text, name


@pytest.mark.parametrize("name", CASES)
def test_findings_are_identical_with_any_jobs_cold_and_warm(name, tmp_path, monkeypatch):
    root = _copy(name, tmp_path)
    codes = {c for _, _, c in _expected(root)}
    monkeypatch.setattr(linter, "MIN_FILES_PER_WORKER", 1)  # a small tree still gets workers
    plain = _run(root, codes, jobs=1, monkeypatch=monkeypatch)
    assert _run(root, codes, jobs=3, monkeypatch=monkeypatch) == plain
    cold = _run(root, codes, jobs=3, no_cache=False, monkeypatch=monkeypatch)
    index = root / ".torchlint_cache" / __version__ / "index.json"
    assert index.is_file()
    warm = _run(root, codes, jobs=1, no_cache=False, monkeypatch=monkeypatch)
    assert cold == warm == plain


def _entries(root: Path) -> dict:
    return json.loads((root / ".torchlint_cache" / __version__ / "index.json").read_text())["files"]


def test_a_changed_dependency_invalidates_the_cached_findings(tmp_path, monkeypatch):
    root = _copy("modules_across_files", tmp_path)
    codes = {"TL206"}
    first = _run(root, codes, no_cache=False, monkeypatch=monkeypatch)
    assert ("models/net.py", 12, "TL206") in {(p, r, c) for p, r, c, _ in first}
    assert "models/base.py" in _entries(root)["models/net.py"]["deps"]
    base = root / "models" / "base.py"
    base.write_text("class Base:\n    pass\n")  # no longer a LightningModule: Net is no Module
    second = {(p, r, c) for p, r, c, _ in _run(root, codes, no_cache=False, monkeypatch=monkeypatch)}
    assert ("models/net.py", 12, "TL206") not in second
    assert ("models/deep.py", 9, "TL206") in second  # its chain does not go through base.py
    shutil.copy(PROJECTS / "modules_across_files" / "models" / "base.py", base)
    third = _run(root, codes, no_cache=False, monkeypatch=monkeypatch)
    assert third == first


def test_a_module_that_appears_invalidates_what_was_concluded_without_it(tmp_path, monkeypatch):
    (tmp_path / "net.py").write_text("import torch\nfrom layers import Base\n\n\nclass Net(Base):\n"
                                     "    def __init__(self):\n        super().__init__()\n"
                                     "        self.mask = torch.ones(3)\n")
    assert _run(tmp_path, {"TL206"}, no_cache=False, monkeypatch=monkeypatch) == []
    (tmp_path / "layers.py").write_text("import torch.nn as nn\n\n\nclass Base(nn.Module):\n    pass\n")
    found = _run(tmp_path, {"TL206"}, paths=["net.py"], no_cache=False, monkeypatch=monkeypatch)
    assert [(p, r, c) for p, r, c, _ in found] == [("net.py", 8, "TL206")]
    (tmp_path / "layers.py").unlink()
    assert _run(tmp_path, {"TL206"}, paths=["net.py"], no_cache=False, monkeypatch=monkeypatch) == []


def test_a_single_file_run_sees_the_modules_it_imports(tmp_path, monkeypatch, run_cli):
    root = _copy("modules_across_files", tmp_path)
    code, out, _ = run_cli("check", "--no-cache", "--select", "TL206", "--output-format", "concise",
                           "models/net.py", cwd=root)
    assert code == 1 and "models/net.py:12:9: TL206" in out
    # An editor's buffer on stdin, named after its file, is judged the same way.
    source = (root / "models" / "net.py").read_text()
    code, out, _ = run_cli("check", "--no-cache", "--select", "TL206", "--output-format", "concise",
                           "--stdin-filename", "models/net.py", "-", cwd=root, input=source)
    assert code == 1 and "models/net.py:12:9: TL206" in out


def test_without_roots_a_file_is_judged_alone(tmp_path):
    root = _copy("modules_across_files", tmp_path)
    path = root / "models" / "net.py"
    alone = lint_task(FileTask(path=str(path), display="net.py", codes=frozenset({"TL206"})))
    assert alone.findings == [] and alone.deps == {}
    indexed = lint_task(FileTask(path=str(path), display="net.py", codes=frozenset({"TL206"}),
                                 index_roots=(str(root),)))
    assert [f.row for f in indexed.findings] == [12]
    assert str(root / "models" / "base.py") in indexed.deps


def test_the_index_reads_nothing_outside_its_roots(tmp_path, monkeypatch):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "layers.py").write_text("import torch.nn as nn\n\n\nclass Base(nn.Module):\n    pass\n")
    root = tmp_path / "project"
    root.mkdir()
    (root / "layers.py").symlink_to(outside / "layers.py")
    (root / "net.py").write_text("import torch\nfrom layers import Base\n\n\nclass Net(Base):\n"
                                 "    def __init__(self):\n        super().__init__()\n"
                                 "        self.mask = torch.ones(3)\n")
    index = ProjectIndex(str(root / "net.py"), (str(root),))
    assert index.module("layers") is None  # the link leads out of the project
    assert _run(root, {"TL206"}, paths=["net.py"], monkeypatch=monkeypatch) == []


def test_module_names_and_relative_imports(tmp_path):
    pkg = tmp_path / "src" / "pkg" / "models"
    pkg.mkdir(parents=True)
    (pkg.parent / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "net.py").write_text("")
    assert module_name_of(str(pkg / "net.py")) == ("pkg.models.net", str(tmp_path / "src"), False)
    assert module_name_of(str(pkg / "__init__.py")) == ("pkg.models", str(tmp_path / "src"), True)
    assert module_name_of(str(tmp_path / "train.py")) == ("train", str(tmp_path), False)
    assert relative_base("pkg.models", 1, "base") == "pkg.models.base"
    assert relative_base("pkg.models", 2, None) == "pkg"
    assert relative_base("pkg", 3, "x") is None  # above the top package


def test_re_exports_and_cycles_are_followed_safely(tmp_path):
    (tmp_path / "a.py").write_text("from b import Thing\n")
    (tmp_path / "b.py").write_text("from a import Thing\n")  # a cycle of re-exports defines nothing
    (tmp_path / "c.py").write_text("from d import Real as Thing\n")
    (tmp_path / "d.py").write_text("class Real:\n    pass\n")
    index = ProjectIndex(str(tmp_path / "main.py"), (str(tmp_path),))
    assert index.definition("a.Thing") is None
    found = index.definition("c.Thing")
    assert found is not None and found[0].name == "d" and getattr(found[1], "name", "") == "Real"
    assert index.definition("os.path.join") is None and not any("os" in p for p in index.deps)


def _notebook(cells: list[str]) -> str:
    return json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                                  "source": c} for c in cells],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def test_notebook_flows_across_cells_and_into_project_files(tmp_path, monkeypatch):
    shutil.copy(PROJECTS / "training_across_files" / "models.py", tmp_path / "models.py")
    cells = [
        "import torch\nimport torch.nn as nn\nfrom models import Classifier\n",
        "model = Classifier()\n",
        "model = model.to('cuda')\nmodel = model.train()\n",
        "criterion = nn.CrossEntropyLoss()\nfor x, y in loader:\n    out = model(x)\n    loss = criterion(out, y)\n",
        "from models import Logits\nplain = Logits().to('cuda')\nloss = criterion(plain(x), y)\n",
    ]
    (tmp_path / "train.ipynb").write_text(_notebook(cells))
    monkeypatch.chdir(tmp_path)
    report = check(CheckRequest(["train.ipynb"], overrides=CliOverrides(select=["TL401"]), no_cache=True,
                                cwd=tmp_path))
    assert [(f.cell, f.row, f.code) for f in report.findings] == [(4, 4, "TL401")]


def test_language_server_documents_use_the_index(tmp_path, monkeypatch):
    from torchlint.api import document_resolver, lint_document

    root = _copy("modules_across_files", tmp_path)
    (root / "torchlint.toml").write_text('extend-select = ["TL206"]\n')  # off by default since the triage
    monkeypatch.chdir(root)
    path = root / "models" / "net.py"
    findings = lint_document(path, path.read_bytes(), document_resolver(root))
    assert ("TL206", 12) in {(f.code, f.row) for f in findings}


def test_special_and_oversized_modules_are_not_read(tmp_path):
    os_fifo = tmp_path / "layers.py"
    os.mkfifo(os_fifo)  # reading it would block the run
    (tmp_path / "big.py").write_text("class Base:\n    pass\n" + "# padding\n" * 200)
    index = ProjectIndex(str(tmp_path / "net.py"), (str(tmp_path),), max_bytes=100)
    assert index.module("layers") is None and index.deps[str(os_fifo)] is None
    assert index.module("big") is None and index.deps[str(tmp_path / "big.py")] is None
