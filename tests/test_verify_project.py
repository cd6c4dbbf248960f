"""`--verify` on the user's project (issue 19): the worker imports the module that holds a
finding from a snapshot of the project, the way the program would (package-relative
imports, `sys.path` from the project root, `__main__` blocks not run), builds the user's
class (defaults, or the literal arguments of a call site elsewhere in the project) and
observes the finding on the real object. Every verdict says where it came from (`source`),
and `--verified-only` keeps only what the user's own code confirmed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from torchlint import catalog
from torchlint.checker import check_source
from torchlint.diagnostics import Finding
from torchlint.records import RecordError, Verdict, Verification

LAYERS = """\
import copy
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

from .sizes import WIDTH


class Net(nn.Module):
    def __init__(self, hidden, depth=1):
        super().__init__()
        self.blocks = [nn.Linear(WIDTH, hidden) for _ in range(depth)]
        self.mask = torch.ones(hidden)
        self.template = copy.deepcopy(self.mask)


class Registered(nn.Module):
    def __init__(self):
        super().__init__()
        self.view = [nn.Linear(2, 2)]
        self.layers = nn.ModuleList(self.view)


class NoSuper(nn.Module):
    def __init__(self):
        self.fc = nn.Linear(2, 2)


class Noisy(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(WIDTH, 3)

    def forward(self, x):
        return F.dropout(self.fc(x), 0.5)


class Quiet(Noisy):
    def __init__(self, p=0.0):
        super().__init__()
        self.p = p

    def forward(self, x):
        return F.dropout(self.fc(x), self.p)


if __name__ == "__main__":
    os._exit(7)  # would kill the file's process: every verdict would be an error
"""

TRAIN = """\
import argparse

from pkg.layers import Net

parser = argparse.ArgumentParser()
parser.add_argument("--hidden", type=int, default=8)
args = parser.parse_args()

model = Net(16, depth=2)
"""

BROKEN = """\
import torch
import torch.nn as nn

from .sizes import WIDTH

rows = open("data/labels.csv").read().splitlines()  # not in the snapshot: only .py files are


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = torch.ones(WIDTH)

    def forward(self, x):
        return x * self.scale
"""


EXPORTED = """\
import copy

import torch
import torch.nn as nn


class Export(nn.Module):
    def __init__(self):
        super().__init__()
        self.buf = torch.zeros(2)
        self.spare = copy.copy(self.buf)
"""


def _project(root: Path) -> None:
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "sizes.py").write_text("WIDTH = 4\n")
    (root / "pkg" / "layers.py").write_text(LAYERS)
    (root / "pkg" / "broken.py").write_text(BROKEN)
    (root / "train.py").write_text(TRAIN)
    (root / "4.1_export-model.py").write_text(EXPORTED)  # no module name: loaded from its path
    (root / "data").mkdir()
    (root / "data" / "labels.csv").write_text("a\nb\n")
    (root / ".env").write_text("TOKEN=secret\n")


def _findings(root: Path, rel: str, codes: tuple[str, ...]) -> list[Finding]:
    rules = [catalog.by_code()[c] for c in codes]
    found = check_source(rel, (root / rel).read_bytes(), rules)
    return [f for f in found if f.code in codes]


def _at(findings: list[Finding], code: str, text: str, root: Path) -> Finding:
    for f in findings:
        if f.code == code and text in (root / f.path).read_text().splitlines()[f.row - 1]:
            return f
    raise AssertionError((code, text, findings))


# -- the Verdict record ----------------------------------------------------------------------

def test_a_verdict_round_trips_and_a_bad_shape_is_refused():
    run = Verdict("confirmed", "seen", "your-code", ("a.py:3",), "cpu", "2.13.0", ("landlock",))
    assert Verdict.from_json(json.loads(json.dumps(run.to_json()))) == run
    both = Verification((run, Verdict("demonstrated", "generic", "probe", device="cuda")))
    assert Verification.from_json(both.to_json()) == both
    assert both.verdict == "confirmed" and both.source == "your-code" and both.verified
    assert both.to_json()["source"] == "your-code" and both.to_json()["runs"][0]["ran"] == ["a.py:3"]
    for bad in (dict(run.to_json(), source="somebody"), dict(run.to_json(), verdict="fine"),
                dict(run.to_json(), ran="a.py:3"), dict(run.to_json(), evidence="x" * 5000)):
        with pytest.raises(RecordError):
            Verdict.from_json(bad)


def test_verified_only_keeps_confirmed_your_code_only():
    probe = Verification((Verdict("confirmed", "probe says", "probe"),))
    mine = Verification((Verdict("confirmed", "ran", "your-code", ("a.py:1",)),))
    shown = Verification((Verdict("demonstrated", "probe", "probe"),))
    assert [v.verified for v in (probe, mine, shown)] == [False, True, False]


def test_text_output_marks_a_probe_verdict_as_generic():
    from torchlint.output.text import verify_line

    finding = Finding(code="TL206", message="m", path="a.py", row=1, col=1, end_row=1, end_col=2)
    finding.verify = Verification((Verdict("demonstrated", "probe: a mask stayed", "probe", torch="2.13.0"),))
    assert "[generic probe, not your code]" in verify_line(finding)
    finding.verify = Verification((Verdict("confirmed", "seen", "your-code", ("a.py:7",), torch="2.13.0"),))
    line = verify_line(finding)
    assert "[your code: a.py:7]" in line and "generic" not in line


# -- planning the import, statically -----------------------------------------------------------

def test_the_module_name_and_sys_path_come_from_the_packages(tmp_path):
    from torchlint.verify.project import ProjectTree, module_of

    _project(tmp_path)
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "x.py").write_text("")
    tree = ProjectTree(str(tmp_path))
    try:
        assert sorted(tree.files) == ["4.1_export-model.py", "pkg/__init__.py", "pkg/broken.py", "pkg/layers.py", "pkg/sizes.py", "train.py"]
        assert not (Path(tree.snapshot) / ".env").exists() and not (Path(tree.snapshot) / "data").exists()
        assert module_of("pkg/layers.py", tree.files) == ("pkg.layers", [""])
        assert module_of("train.py", tree.files) == ("train", [""])
        assert module_of("src/a/b.py", {"src/a/__init__.py": ""}) == ("a.b", ["src", ""])
    finally:
        tree.close()
    assert not Path(tree.snapshot).exists()


def test_constructor_arguments_come_from_a_literal_call_site(tmp_path, monkeypatch):
    from torchlint.verify.project import NotImportable, ProjectTree, plan_import

    _project(tmp_path)
    monkeypatch.chdir(tmp_path)
    tree = ProjectTree(str(tmp_path))
    try:
        mask = _at(_findings(tmp_path, "pkg/layers.py", ("TL206",)), "TL206", "self.mask", tmp_path)
        found = plan_import(mask, tree)
        assert (found.module, found.cls, found.args, found.kwargs, found.attribute) == (
            "pkg.layers", "Net", (16,), (("depth", 2),), "mask")
        assert found.ran == ("pkg/layers.py:11", "train.py:9")
        (tmp_path / "train.py").write_text(TRAIN.replace("Net(16, depth=2)", "Net(args.hidden)"))
        again = ProjectTree(str(tmp_path))
        try:
            with pytest.raises(NotImportable, match="needs `hidden`"):
                plan_import(mask, again)
        finally:
            again.close()
    finally:
        tree.close()


# -- in the sandboxed worker -----------------------------------------------------------------

def _verify(root: Path, findings: list[Finding], **kw) -> None:
    from torchlint.verify import runner

    texts = {f.path: (root / f.path).read_text() for f in findings}
    runner.verify_findings(findings, device="cpu", timeout=120, sources=texts.get, project=str(root), **kw)


@pytest.mark.torch
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox is Linux-only")
def test_the_project_is_imported_and_observed_on_the_users_objects(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    _project(tmp_path)
    monkeypatch.chdir(tmp_path)
    layers = _findings(tmp_path, "pkg/layers.py", ("TL206", "TL402", "TL701", "TL702"))
    broken = _findings(tmp_path, "pkg/broken.py", ("TL206",))
    exported = _findings(tmp_path, "4.1_export-model.py", ("TL206",))
    mask = _at(layers, "TL206", "self.mask", tmp_path)
    blocks = _at(layers, "TL701", "self.blocks", tmp_path)
    view = _at(layers, "TL701", "self.view", tmp_path)
    nosuper = next(f for f in layers if f.code == "TL702")
    noisy, quiet = (_at(layers, "TL402", text, tmp_path) for text in ("0.5)", "self.p)"))
    _verify(tmp_path, layers + broken + exported, cache_dir=tmp_path / ".cache")

    # package-relative import (`from .sizes import WIDTH`), `copy` (which no slice may
    # import), constructor arguments from train.py, and the `__main__` block never ran.
    assert mask.verify.verdict == "confirmed" and mask.verify.source == "your-code", mask.verify
    run = mask.verify.runs[0]
    assert "not in `pkg.layers.Net(16, depth=2)`.state_dict()" in run.evidence, run
    assert run.ran == ("pkg/layers.py:11", "train.py:9")
    assert blocks.verify.verdict == "confirmed" and "2 modules in `self.blocks`" in blocks.verify.runs[0].evidence
    # A finding the real object contradicts: the list only repeats a registered module.
    assert view.verify.verdict == "not-reproduced" and view.verify.source == "your-code", view.verify
    assert nosuper.verify.verdict == "confirmed" and "Module.__init__() call" in nosuper.verify.runs[0].evidence
    # forward() on an input made from the first layer's shape, in eval() mode.
    assert noisy.verify.verdict == "confirmed" and "functional dropout is still on" in noisy.verify.runs[0].evidence
    assert quiet.verify.verdict == "not-reproduced" and quiet.verify.source == "your-code", quiet.verify
    assert [f.verify.verdict for f in exported] == ["confirmed"], [f.verify for f in exported]
    # The module whose top level fails: an error verdict of its own, one line.
    (head,) = broken
    assert head.verify.verdict == "error" and "importing `pkg.broken` failed: FileNotFoundError" in \
        head.verify.runs[0].evidence, head.verify

    # A warm run serves the same verdicts from the cache; a change elsewhere in the project
    # (the call site) is a new question.
    again = _findings(tmp_path, "pkg/layers.py", ("TL206",))
    _verify(tmp_path, again, cache_dir=tmp_path / ".cache")
    assert again[0].verify == mask.verify
    (tmp_path / "train.py").write_text(TRAIN.replace("Net(16, depth=2)", "Net(args.hidden)"))
    late = _at(_findings(tmp_path, "pkg/layers.py", ("TL206",)), "TL206", "self.mask", tmp_path)
    _verify(tmp_path, [late], cache_dir=tmp_path / ".cache")
    assert late.verify.source == "probe" and "needs `hidden`" in late.verify.runs[0].evidence, late.verify


@pytest.mark.torch
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox is Linux-only")
def test_without_a_sandbox_nothing_of_the_project_runs(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    _project(tmp_path)
    marker = tmp_path / "ran"
    (tmp_path / "pkg" / "layers.py").write_text(f"open({str(marker)!r}, 'w').close()\n" + LAYERS)
    monkeypatch.chdir(tmp_path)
    layers = _findings(tmp_path, "pkg/layers.py", ("TL206",))
    _verify(tmp_path, layers, _simulate_missing=("landlock",))
    assert all(f.verify.verdict == "skipped" and "sandbox cannot be established" in f.verify.runs[0].evidence
               for f in layers), [f.verify for f in layers]
    assert not marker.exists()


# -- TL601: what the project's own torch.save stores -------------------------------------------

SAVE = """\
import argparse

import torch

parser = argparse.ArgumentParser()
args = parser.parse_args()
model = torch.nn.Linear(2, 2)
torch.save({"model": model.state_dict(), "args": args}, f"{args.out}/best.pt")
torch.save(model.state_dict(), "weights.pt")
"""

LOAD = """\
import torch

state = torch.load("runs/best.pt")
weights = torch.load("weights.pt")
"""


def test_the_shape_of_what_the_project_saves():
    import ast

    from torchlint.verify.checkpoints import checkpoint_shape, saves

    tree = ast.parse(SAVE)
    assert saves(tree) == [(8, "namespace", "best.pt"), (9, "state_dict", "weights.pt")]
    loads = [n for n in ast.walk(ast.parse(LOAD)) if isinstance(n, ast.Call)]
    by_line = {n.lineno: n for n in loads if getattr(n.func, "attr", "") == "load"}
    assert checkpoint_shape(by_line[3], [("train.py", tree)]) == ("namespace", "train.py:8")
    assert checkpoint_shape(by_line[4], [("train.py", tree)]) == ("state_dict", "train.py:9")
    whole = ast.parse("import torch\ntorch.save(model, path)\n")
    assert saves(whole) == [(2, "module", "=path")]
    # A load through a name a save wrote through (an in-memory buffer) is that save's shape,
    # not the riskiest save of the project; a name no save uses is a computed path.
    buffered = ast.parse("import io, torch\nbuf = io.BytesIO()\ntorch.save(model.state_dict(), buf)\n")
    [load_buf] = [n for n in ast.walk(ast.parse("torch.load(buf)")) if isinstance(n, ast.Call)]
    assert checkpoint_shape(load_buf, [("a.py", buffered), ("b.py", whole)]) == ("state_dict", "a.py:3")
    [load_other] = [n for n in ast.walk(ast.parse("torch.load(ckpt)")) if isinstance(n, ast.Call)]
    assert checkpoint_shape(load_other, [("a.py", buffered), ("b.py", whole)]) == ("module", "b.py:2")


@pytest.mark.torch
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox is Linux-only")
def test_tl601_loads_a_checkpoint_of_the_shape_the_project_saves(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    (tmp_path / "train.py").write_text(SAVE)
    (tmp_path / "evaluate.py").write_text(LOAD)
    monkeypatch.chdir(tmp_path)
    found = _findings(tmp_path, "evaluate.py", ("TL601",))
    namespace, weights = sorted(found, key=lambda f: f.row)
    _verify(tmp_path, found)
    # torch 2.13 refuses a Namespace under its default weights_only=True: the load the code
    # needs is the unsafe one, not "a state_dict loads safely".
    # TL601 is off by default: the demonstration is labelled, not claimed (verify/claims.py).
    assert namespace.verify.verdict == "skipped" and namespace.verify.source == "probe", namespace.verify
    assert "(demonstrated)" in namespace.verify.runs[0].evidence
    assert "train.py:8" in namespace.verify.runs[0].evidence and "argparse.Namespace" in \
        namespace.verify.runs[0].evidence
    # A state_dict loads under 2.13's default, which says nothing of torch < 2.6's: not shown.
    assert weights.verify.verdict == "skipped" and "train.py:9" in weights.verify.runs[0].evidence, \
        weights.verify


@pytest.mark.torch
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox is Linux-only")
def test_the_snapshot_is_readable_without_namespaces_too(tmp_path, monkeypatch):
    """Without a mount namespace the worker (a fresh uid when run as root) reads the snapshot
    in place, through Landlock's grant."""
    pytest.importorskip("torch")
    _project(tmp_path)
    monkeypatch.chdir(tmp_path)
    mask = _at(_findings(tmp_path, "pkg/layers.py", ("TL206",)), "TL206", "self.mask", tmp_path)
    _verify(tmp_path, [mask], _namespaces=False)
    assert mask.verify.verdict == "confirmed" and mask.verify.source == "your-code", mask.verify
