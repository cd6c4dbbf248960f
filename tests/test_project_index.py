"""The project index: names a file imports from other files of the project, resolved there
(base classes, helpers, factories, module-level loaders), and the cache entries that depend
on those files.

Each rule's cross-file cases are its project fixtures, tests/fixtures/<code>/projects/<case>/
(files and notebooks with `# expect:` comments), checked here as a whole tree with that rule
selected. The index machinery tests below borrow one rule's project and name the rule by name."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from conftest import EXPECT_RE, FIXTURES, CODE_RE, cache_entry_files, expected_findings, read_cache_entries
from torchlint import catalog, linter
from torchlint.analysis.project_index import ProjectIndex, module_name_of, relative_base
from torchlint.api import CheckRequest, check
from torchlint.config import CliOverrides
from torchlint.linter import FileTask, lint_task

RULE_PROJECTS = sorted(FIXTURES.glob("TL*/projects/*/"))
# The machinery tests' vehicle: a rule that asks the index whether a class is an nn.Module.
ATTRIBUTE = catalog.by_name()["unregistered-tensor-attribute"].code
MODULES = FIXTURES / ATTRIBUTE / "projects" / "modules_across_files"

Expected = set[tuple[str, "int | None", int, str]]  # (path, notebook cell or None, row, code)


def _notebook_expectations(path: Path) -> set[tuple["int | None", int, str]]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    out: set[tuple["int | None", int, str]] = set()
    for number, cell in enumerate(cells, 1):
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        for row, line in enumerate(source.splitlines(), 1):
            match = EXPECT_RE.search(line)
            out |= {(number, row, code) for code, _ in CODE_RE.findall(match.group(1))} if match else set()
    return out


def _expected(root: Path) -> Expected:
    out: Expected = set()
    for path in sorted(root.rglob("*")):
        name = path.relative_to(root).as_posix()
        if path.suffix == ".py":
            out |= {(name, None, row, code) for row, code in expected_findings(path)}
        elif path.suffix == ".ipynb":
            out |= {(name, cell, row, code) for cell, row, code in _notebook_expectations(path)}
    return out


def _run(root: Path, codes: set[str], paths: list[str] | None = None, jobs: int = 1, no_cache: bool = True,
         monkeypatch: pytest.MonkeyPatch | None = None) -> list[tuple[str, "int | None", int, str, str]]:
    if monkeypatch is not None:
        monkeypatch.chdir(root)
    report = check(CheckRequest(paths or ["."], overrides=CliOverrides(select=sorted(codes)), jobs=jobs,
                                no_cache=no_cache, cwd=root, warn_empty_directories=False))
    assert report.internal_errors == 0
    return [(f.path, f.cell, f.row, f.code, f.message) for f in report.findings]


def _copy(project: Path, tmp_path: Path) -> Path:
    root = tmp_path / project.name
    shutil.copytree(project, root)
    return root


def _found(found: list[tuple[str, "int | None", int, str, str]]) -> set[tuple[str, int, str]]:
    return {(path, row, code) for path, _, row, code, _ in found}


def _case(project: Path) -> str:
    return f"{project.parent.parent.name}/{project.name}"


@pytest.mark.parametrize("project", RULE_PROJECTS, ids=_case)
def test_rule_project_fixture(project, tmp_path, monkeypatch):
    """The rule of the fixture, selected alone, reports the `# expect:` lines of the whole tree
    (files and notebook cells), and nothing in its near misses."""
    code = project.parent.parent.name
    root = _copy(project, tmp_path)
    expected = _expected(root)
    assert expected, f"{_case(project)}: no `# expect:` comments"
    assert {c for *_, c in expected} == {code}, f"{_case(project)}: expects only {code}"
    assert any("must stay silent" in p.read_text() for p in root.rglob("*") if p.is_file()), \
        f"{_case(project)}: needs a near-miss section"
    found = {(path, cell, row, c) for path, cell, row, c, _ in _run(root, {code}, monkeypatch=monkeypatch)}
    assert found == expected, f"missed: {sorted(expected - found, key=str)}; false positives: {sorted(found - expected, key=str)}"


@pytest.mark.parametrize("project", RULE_PROJECTS, ids=_case)
def test_findings_are_identical_with_any_jobs_cold_and_warm(project, tmp_path, monkeypatch):
    root = _copy(project, tmp_path)
    codes = {project.parent.parent.name}
    monkeypatch.setattr(linter, "MIN_FILES_PER_WORKER", 1)  # a small tree still gets workers
    plain = _run(root, codes, jobs=1, monkeypatch=monkeypatch)
    assert _run(root, codes, jobs=3, monkeypatch=monkeypatch) == plain
    cold = _run(root, codes, jobs=3, no_cache=False, monkeypatch=monkeypatch)
    assert cache_entry_files(root / ".torchlint_cache")
    warm = _run(root, codes, jobs=1, no_cache=False, monkeypatch=monkeypatch)
    assert cold == warm == plain


def _entries(root: Path) -> dict:
    return read_cache_entries(root / ".torchlint_cache")


def test_a_changed_dependency_invalidates_the_cached_findings(tmp_path, monkeypatch):
    root = _copy(MODULES, tmp_path)
    codes = {ATTRIBUTE}
    first = _run(root, codes, no_cache=False, monkeypatch=monkeypatch)
    assert ("models/net.py", 12, ATTRIBUTE) in _found(first)
    assert "models/base.py" in _entries(root)["models/net.py"]["deps"]
    base = root / "models" / "base.py"
    base.write_text("class Base:\n    pass\n")  # no longer a LightningModule: Net is no Module
    second = _found(_run(root, codes, no_cache=False, monkeypatch=monkeypatch))
    assert ("models/net.py", 12, ATTRIBUTE) not in second
    assert ("models/deep.py", 9, ATTRIBUTE) in second  # its chain does not go through base.py
    shutil.copy(MODULES / "models" / "base.py", base)
    third = _run(root, codes, no_cache=False, monkeypatch=monkeypatch)
    assert third == first


def test_a_same_size_edit_under_the_old_mtime_reaches_the_next_run_of_the_process(tmp_path, monkeypatch):
    """The parsed-module memo outlives a run (`--watch`, the language server): `cp -p` or a
    checkout within one timestamp tick keeps a dependency's size and mtime, not its ctime."""
    root = _copy(MODULES, tmp_path)
    codes = {ATTRIBUTE}
    first = _found(_run(root, codes, monkeypatch=monkeypatch))
    assert ("models/net.py", 12, ATTRIBUTE) in first
    base = root / "models" / "base.py"
    before = base.stat()
    text = base.read_text()
    edited = text.replace("pl.LightningModule", "pl.Callback" + " " * (len("LightningModule") - len("Callback")))
    assert len(edited) == len(text)
    base.write_text(edited)  # Base is no Module now, so neither is Net
    os.utime(base, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert ("models/net.py", 12, ATTRIBUTE) not in _found(_run(root, codes, monkeypatch=monkeypatch))


def test_a_module_that_appears_invalidates_what_was_concluded_without_it(tmp_path, monkeypatch):
    (tmp_path / "net.py").write_text("import torch\nfrom layers import Base\n\n\nclass Net(Base):\n"
                                     "    def __init__(self):\n        super().__init__()\n"
                                     "        self.mask = torch.ones(3)\n\n    def forward(self, x):\n        return x * self.mask\n")
    assert _run(tmp_path, {ATTRIBUTE}, no_cache=False, monkeypatch=monkeypatch) == []
    (tmp_path / "layers.py").write_text("import torch.nn as nn\n\n\nclass Base(nn.Module):\n    pass\n")
    found = _run(tmp_path, {ATTRIBUTE}, paths=["net.py"], no_cache=False, monkeypatch=monkeypatch)
    assert sorted(_found(found)) == [("net.py", 8, ATTRIBUTE)]
    (tmp_path / "layers.py").unlink()
    assert _run(tmp_path, {ATTRIBUTE}, paths=["net.py"], no_cache=False, monkeypatch=monkeypatch) == []


def test_a_package_marker_that_appears_invalidates_what_was_resolved_without_it(tmp_path, monkeypatch):
    """Without app/__init__.py, app/train.py is the top-level module `train` and `models` is
    app/models.py; with it, train.py is `app.train` and `models` is the models.py above app/,
    as `python -m app.train` would import. The marker is a dependency, absent or present."""
    app = tmp_path / "app"
    app.mkdir()
    (app / "train.py").write_text(NET.replace("from ..layers", "from models"))
    (app / "models.py").write_text("class Base:\n    pass\n")
    (tmp_path / "models.py").write_text("import torch.nn as nn\n\n\nclass Base(nn.Module):\n    pass\n")
    assert _run(tmp_path, {ATTRIBUTE}, no_cache=False, monkeypatch=monkeypatch) == []
    assert _entries(tmp_path)["app/train.py"]["deps"]["app/__init__.py"] == "missing"
    (app / "__init__.py").write_text("")
    found = _found(_run(tmp_path, {ATTRIBUTE}, no_cache=False, monkeypatch=monkeypatch))
    assert found == {(os.path.join("app", "train.py"), 8, ATTRIBUTE)}
    assert _found(_run(tmp_path, {ATTRIBUTE}, no_cache=True, monkeypatch=monkeypatch)) == found
    (app / "__init__.py").unlink()
    assert _run(tmp_path, {ATTRIBUTE}, no_cache=False, monkeypatch=monkeypatch) == []


BASE_MODULE = "import torch.nn as nn\n\n\nclass Base(nn.Module):\n    pass\n"


def _two_bases(root: Path, train_import: str) -> Path:
    """root/models.py has an nn.Module Base, root/app/models.py a plain one; app/train.py's
    Net(Base) is flagged only when `train_import` reaches the first."""
    app = root / "app"
    app.mkdir(parents=True)
    (app / "train.py").write_text(NET.replace("from ..layers import Base", train_import))
    (app / "models.py").write_text("class Base:\n    pass\n")
    (root / "models.py").write_text(BASE_MODULE)
    return app


def _cached_and_fresh(root: Path, monkeypatch, paths: list[str] | None = None) -> tuple[set, set]:
    return (_found(_run(root, {ATTRIBUTE}, paths=paths, no_cache=False, monkeypatch=monkeypatch)),
            _found(_run(root, {ATTRIBUTE}, paths=paths, no_cache=True, monkeypatch=monkeypatch)))


def test_a_marker_that_makes_a_relative_import_resolve_is_a_dependency(tmp_path, monkeypatch):
    """`from ..models import Base` resolves to nothing while app/ is no package: no module is
    looked up, yet the marker's absence decided the answer."""
    app = _two_bases(tmp_path, "from ..models import Base")
    (tmp_path / "pyproject.toml").write_text("[tool.torchlint]\n")
    assert _cached_and_fresh(tmp_path, monkeypatch) == (set(), set())
    (app / "__init__.py").write_text("")
    cached, fresh = _cached_and_fresh(tmp_path, monkeypatch)
    assert cached == fresh == {(os.path.join("app", "train.py"), 8, ATTRIBUTE)}


def test_a_marker_above_the_allowed_roots_is_a_dependency_by_existence(tmp_path, monkeypatch):
    """Only app/ is a root (no config, no git): proj/__init__.py appearing above it renames
    app/train.py to proj.app.train, and `app.models` no longer resolves. Its existence is
    recorded (a stat); nothing above the roots is read."""
    app = _two_bases(tmp_path / "proj", "from app.models import Base")
    (app / "__init__.py").write_text("")
    (app / "models.py").write_text(BASE_MODULE)
    paths = [os.path.join("proj", "app", "train.py")]
    flagged = {(paths[0], 8, ATTRIBUTE)}
    assert _cached_and_fresh(tmp_path, monkeypatch, paths) == (flagged, flagged)
    (tmp_path / "proj" / "__init__.py").write_text("")
    assert _cached_and_fresh(tmp_path, monkeypatch, paths) == (set(), set())


@pytest.mark.parametrize("marker", ["link", "oversized"])
def test_a_marker_that_cannot_be_read_is_recorded_by_existence(tmp_path, monkeypatch, marker):
    app = _two_bases(tmp_path / "proj", "from models import Base")
    config = "[tool.torchlint]\n" + ("max-file-size = 1000\n" if marker == "oversized" else "")
    (tmp_path / "proj" / "pyproject.toml").write_text(config)
    if marker == "link":
        (tmp_path / "outside.py").write_text("")
        (app / "__init__.py").symlink_to(tmp_path / "outside.py")  # outside the allowed roots
    else:
        (app / "__init__.py").write_text("#" * 2000 + "\n")  # past max-file-size
    root = tmp_path / "proj"
    flagged = {(os.path.join("app", "train.py"), 8, ATTRIBUTE)}
    assert _cached_and_fresh(root, monkeypatch) == (flagged, flagged)
    (app / "__init__.py").unlink()
    assert _cached_and_fresh(root, monkeypatch) == (set(), set())


def test_a_marker_that_appears_unreadable_is_seen_by_existence(tmp_path, monkeypatch):
    """An app/__init__.py past max-file-size still makes app/ a package: its appearance is not
    mistaken for "still absent" because its bytes cannot be hashed."""
    app = _two_bases(tmp_path, "from models import Base")
    (tmp_path / "pyproject.toml").write_text("[tool.torchlint]\nmax-file-size = 1000\n")
    assert _cached_and_fresh(tmp_path, monkeypatch, ["app/train.py"]) == (set(), set())
    (app / "__init__.py").write_text("#" * 2000 + "\n")
    flagged = {("app/train.py", 8, ATTRIBUTE)}
    assert _cached_and_fresh(tmp_path, monkeypatch, ["app/train.py"]) == (flagged, flagged)


def test_a_marker_also_probed_as_an_unusable_module_keeps_its_existence(tmp_path, monkeypatch):
    """pkg/__init__.py links out of the roots: a marker (pkg/ is a package) that `from pkg
    import Mixin` cannot read. Recorded as both, its removal is seen."""
    (tmp_path / "outside.py").write_text("class Mixin:\n    pass\n")
    root = tmp_path / "proj"
    app = _two_bases(root, "from pkg import Mixin\nfrom models import Base")
    train = app / "train.py"
    train.write_text(train.read_text().replace("class Net(Base)", "class Net(Mixin, Base)"))
    app.rename(root / "pkg")
    (root / "pkg" / "__init__.py").symlink_to(tmp_path / "outside.py")
    (root / "pyproject.toml").write_text("[tool.torchlint]\n")
    paths = [os.path.join("pkg", "train.py")]
    flagged = {(paths[0], 9, ATTRIBUTE)}
    assert _cached_and_fresh(root, monkeypatch, paths) == (flagged, flagged)
    (root / "pkg" / "__init__.py").unlink()
    assert _cached_and_fresh(root, monkeypatch, paths) == (set(), set())


def test_a_marker_that_appears_while_a_file_is_linted_is_recorded_as_it_was_seen(tmp_path, monkeypatch):
    from torchlint.analysis import project_index as pi

    app = _two_bases(tmp_path, "from models import Base")
    (tmp_path / "pyproject.toml").write_text("[tool.torchlint]\n")
    made = pi.ProjectIndex.__init__

    def saved_meanwhile(self, *args, **kwargs):
        made(self, *args, **kwargs)
        (app / "__init__.py").write_text("")  # the module name was decided without it

    monkeypatch.setattr(pi.ProjectIndex, "__init__", saved_meanwhile)
    assert _found(_run(tmp_path, {ATTRIBUTE}, paths=["app/train.py"], no_cache=False, monkeypatch=monkeypatch)) == set()
    monkeypatch.setattr(pi.ProjectIndex, "__init__", made)
    cached, fresh = _cached_and_fresh(tmp_path, monkeypatch, ["app/train.py"])
    assert cached == fresh == {("app/train.py", 8, ATTRIBUTE)}


def test_a_single_file_run_sees_the_modules_it_imports(tmp_path, monkeypatch, run_cli):
    root = _copy(MODULES, tmp_path)
    code, out, _ = run_cli("check", "--no-cache", "--select", ATTRIBUTE, "--output-format", "concise",
                           "models/net.py", cwd=root)
    assert code == 1 and f"models/net.py:12:9: {ATTRIBUTE}" in out
    # An editor's buffer on stdin, named after its file, is judged the same way.
    source = (root / "models" / "net.py").read_text()
    code, out, _ = run_cli("check", "--no-cache", "--select", ATTRIBUTE, "--output-format", "concise",
                           "--stdin-filename", "models/net.py", "-", cwd=root, input=source)
    assert code == 1 and f"models/net.py:12:9: {ATTRIBUTE}" in out


def test_without_roots_a_file_is_judged_alone(tmp_path):
    root = _copy(MODULES, tmp_path)
    path = root / "models" / "net.py"
    alone = lint_task(FileTask(path=str(path), display="net.py", codes=frozenset({ATTRIBUTE})))
    assert alone.findings == [] and alone.deps == {}
    indexed = lint_task(FileTask(path=str(path), display="net.py", codes=frozenset({ATTRIBUTE}),
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
                                 "        self.mask = torch.ones(3)\n\n    def forward(self, x):\n        return x * self.mask\n")
    index = ProjectIndex(str(root / "net.py"), (str(root),))
    assert index.module("layers") is None  # the link leads out of the project
    assert _run(root, {ATTRIBUTE}, paths=["net.py"], monkeypatch=monkeypatch) == []


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


def test_language_server_documents_use_the_index(tmp_path, monkeypatch):
    from torchlint.api import document_resolver, lint_document

    root = _copy(MODULES, tmp_path)
    (root / "torchlint.toml").write_text(f'extend-select = ["{ATTRIBUTE}"]\n')  # off by default since the triage
    monkeypatch.chdir(root)
    path = root / "models" / "net.py"
    findings = lint_document(path, path.read_bytes(), document_resolver(root))
    assert (ATTRIBUTE, 12) in {(f.code, f.row) for f in findings}


def test_special_and_oversized_modules_are_not_read(tmp_path):
    os_fifo = tmp_path / "layers.py"
    os.mkfifo(os_fifo)  # reading it would block the run
    (tmp_path / "big.py").write_text("class Base:\n    pass\n" + "# padding\n" * 200)
    index = ProjectIndex(str(tmp_path / "net.py"), (str(tmp_path),), max_bytes=100)
    assert index.module("layers") is None and index.deps[str(os_fifo)] is None
    assert index.module("big") is None and index.deps[str(tmp_path / "big.py")] is None


def test_parsed_modules_and_searches_kept_per_process_are_bounded(tmp_path, monkeypatch):
    """A worker lints thousands of files: the modules it keeps parsed stay within a byte
    budget (least recently used forgotten first), and the searches it remembers within a count."""
    from torchlint.analysis import project_index as pi

    monkeypatch.setattr(pi, "_PARSED", pi.OrderedDict())
    monkeypatch.setattr(pi, "_parsed_bytes", 0)
    monkeypatch.setattr(pi, "_PROBED", {})
    monkeypatch.setattr(pi, "_MEMO_BYTES", 1000)
    monkeypatch.setattr(pi, "_PROBED_SIZE", 3)
    for n in range(5):
        (tmp_path / f"m{n}.py").write_text(f"class C{n}:\n    pass\n" + "#" * 390 + "\n")
    index = ProjectIndex(str(tmp_path / "main.py"), (str(tmp_path),))
    for n in range(5):
        assert index.class_def(f"m{n}.C{n}") is not None
    kept = [os.path.basename(p) for p in pi._PARSED]
    assert kept == ["m3.py", "m4.py"] and pi._parsed_bytes == sum(os.path.getsize(tmp_path / k) for k in kept)
    assert len(pi._PROBED) == 3
    # A forgotten module is parsed again when asked for, and the answer is the same.
    assert ProjectIndex(str(tmp_path / "main.py"), (str(tmp_path),)).class_def("m0.C0") is not None
    assert list(pi._PARSED)[-1].endswith("m0.py") and len(pi._PARSED) == 2


NET = ("import torch\nfrom ..layers import Base\n\n\nclass Net(Base):\n    def __init__(self):\n        super().__init__()\n"
       "        self.mask = torch.ones(3)\n\n    def forward(self, x):\n        return x * self.mask\n")


def _package_with_a_base_above(tmp_path: Path) -> Path:
    """pkg/models/net.py, whose base class lives in pkg/layers.py, outside pkg/models/."""
    root = tmp_path / "project"
    (root / "pkg" / "models").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "layers.py").write_text("import torch.nn as nn\n\n\nclass Base(nn.Module):\n    pass\n")
    (root / "pkg" / "models" / "__init__.py").write_text("")
    (root / "pkg" / "models" / "net.py").write_text(NET)
    return root


def test_the_index_reads_the_checked_paths_not_the_rest_of_the_working_directory(tmp_path, monkeypatch):
    """The index reads below the checked paths only: a module of the working directory
    outside them is neither read nor recorded, so the findings (and the cache entries)
    are the same from any working directory."""
    root = _package_with_a_base_above(tmp_path)
    monkeypatch.chdir(root)
    report = check(CheckRequest(["pkg/models"], overrides=CliOverrides(select=[ATTRIBUTE]), no_cache=True,
                                cwd=root, warn_empty_directories=False))
    assert report.findings == [] and report.tasks[0].index_roots == (os.path.realpath(root / "pkg" / "models"),)
    deps = {dep for result in report.results for dep in result.deps}
    assert deps and not any(dep.startswith(str(root / "pkg" / "layers")) for dep in deps)
    # Checked as a whole, the package's own modules are read.
    whole = _found(_run(root, {ATTRIBUTE}, paths=["pkg"], monkeypatch=monkeypatch))
    assert whole == {(os.path.join("pkg", "models", "net.py"), 8, ATTRIBUTE)}


@pytest.mark.parametrize("marker", ["config file", "git work tree"])
def test_a_named_file_is_judged_with_its_project(tmp_path, monkeypatch, marker):
    """pre-commit names staged files, not the project: the directory of the file's config
    file, or the git work tree holding a named file, is where imports resolve too, so a staged
    module is judged as in a run over the whole project (and from any working directory)."""
    root = _package_with_a_base_above(tmp_path)
    if marker == "config file":
        (root / "pyproject.toml").write_text("[tool.torchlint]\n")
    else:
        (root / ".git").mkdir()
    staged = os.path.join("pkg", "models", "net.py")
    for cwd in (root, tmp_path):
        monkeypatch.chdir(cwd)
        report = check(CheckRequest([str(root / staged)], overrides=CliOverrides(select=[ATTRIBUTE]),
                                    no_cache=True, cwd=cwd, warn_empty_directories=False))
        assert [(os.path.relpath(f.path if os.path.isabs(f.path) else os.path.join(cwd, f.path), root), f.row)
                for f in report.findings] == [(staged, 8)]
        assert os.path.realpath(root) in report.tasks[0].index_roots


def test_warm_hits_do_not_depend_on_the_working_directory(tmp_path, monkeypatch):
    """One cache, two runs started from different directories (one of them the project,
    naming it `.`): the second run serves every file from the cache."""
    root = _package_with_a_base_above(tmp_path)
    shutil.copytree(MODULES / "models", root / "models")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    cache = tmp_path / "cache"
    linted: list[str] = []
    real = linter.lint_task_hashed

    def counting(task: FileTask) -> linter.FileResult:
        linted.append(task.display)
        return real(task)

    monkeypatch.setattr(linter, "lint_task_hashed", counting)

    def run(cwd: Path, paths: list[str]) -> tuple[int, list[tuple[str, int, str]]]:
        monkeypatch.chdir(cwd)
        report = check(CheckRequest(paths, overrides=CliOverrides(select=[ATTRIBUTE]), jobs=1, cache_dir=cache,
                                    cwd=cwd, warn_empty_directories=False))
        return len(report.tasks), sorted((os.path.relpath(os.path.join(cwd, f.path), root), f.row, f.code)
                                         for f in report.findings)

    for first, second in (((elsewhere, [str(root / "pkg" / "models"), str(root / "models")]),
                           (root, ["pkg/models", "models"])),
                          ((root, ["."]), (elsewhere, [str(root)]))):
        shutil.rmtree(cache, ignore_errors=True)
        files, cold = run(*first)
        assert len(linted) == files >= 7 and cold
        linted.clear()
        assert run(*second) == (files, cold)
        assert linted == []  # every file a hit


def test_checked_directories_are_import_roots_unless_they_are_packages(tmp_path, monkeypatch):
    """`check src tests` finds `pkg` for the tests as Python would with src on sys.path; a
    checked package is imported from above it, never as an import root of its own (searched,
    8 checked packages made every import probe, and record, 8 more places)."""
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "src" / "pkg" / "__init__.py").write_text("")
    (tmp_path / "src" / "pkg" / "layers.py").write_text("import torch.nn as nn\n\n\nclass Base(nn.Module):\n    pass\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_net.py").write_text(NET.replace("from ..layers", "from pkg.layers"))
    found = _found(_run(tmp_path, {ATTRIBUTE}, paths=["src", "tests"], monkeypatch=monkeypatch))
    assert found == {(os.path.join("tests", "test_net.py"), 8, ATTRIBUTE)}
    test_file = str(tmp_path / "tests" / "test_net.py")
    index = ProjectIndex(test_file, (str(tmp_path / "src" / "pkg"), str(tmp_path / "tests")))
    assert index.module("layers") is None and index.module("pkg.layers") is None
    # Nothing probed under src/pkg: only its marker, which decides that it is not searched.
    assert [dep for dep in index.deps if "src" in dep] == [str(tmp_path / "src" / "pkg" / "__init__.py")]
    assert ProjectIndex(test_file, (str(tmp_path / "src"), str(tmp_path / "tests"))).module("pkg.layers") is not None
