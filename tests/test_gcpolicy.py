"""The collector during a batch lint (torchlint/gcpolicy.py): off for the run, each file's
cycles freed after it, and the caller's setting restored."""

from __future__ import annotations

import gc
import glob

import pytest

from conftest import FIXTURES
from torchlint import api


def _lint_fixtures() -> None:
    files = sorted(glob.glob(str(FIXTURES / "TL1*" / "*.py")))[:30]
    assert len(files) >= 20
    api.check(api.CheckRequest(paths=files, isolated=True, no_cache=True, jobs=1))


@pytest.mark.parametrize("enabled", [True, False])
def test_a_batch_restores_the_callers_collector_setting(enabled):
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        _lint_fixtures()
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()


def test_each_files_cycles_are_freed_after_it_not_frozen_for_the_run():
    _lint_fixtures()  # warm: imports and module-level caches made now are not garbage
    gc.unfreeze()
    gc.collect()
    gc.disable()  # nothing but the batch's own settling may collect from here on
    try:
        _lint_fixtures()
        gc.unfreeze()
        # Unsettled, linting these files leaves thousands of objects in cycles (scopes point
        # at their parents); settled after each file, the frozen survivors hold none of them.
        assert gc.collect() < 200
    finally:
        gc.enable()


def test_texts_of_chains_keep_no_tree_alive():
    """`dotted` remembers, per chain link, where its text starts (weakly keyed): a value that
    held its own key kept every file's chains alive for the rest of the worker's life (8 copies
    of transformers' models/ grew a worker by 20 MB)."""
    import ast
    import weakref

    from torchlint.analysis import astutil

    before = len(astutil._chain_cut)
    long_chain = "x" + "".join(f".a{i}()" for i in range(40))  # past _CHAIN_CUT links
    tree = ast.parse(f"self.model.encoder(x)[0].mean()\n{long_chain}\n")
    chains = [n for n in ast.walk(tree) if isinstance(n, (ast.Attribute, ast.Call, ast.Subscript))]
    texts = [astutil.dotted(n) for n in chains]
    assert "self.model.encoder(x)[0].mean()" in texts and any(t.endswith("...") for t in texts)
    assert len(astutil._chain_cut) >= before + len(chains)
    alive = [weakref.ref(n) for n in chains]
    del tree, chains, texts
    gc.collect()
    assert [r for r in alive if r() is not None] == []
    assert len(astutil._chain_cut) == before


@pytest.mark.parametrize("one_shot", [False, True])
def test_only_a_one_shot_process_freezes_what_a_batch_leaves(monkeypatch, one_shot):
    """gcpolicy.one_shot is the console script's `check` alone: a process that goes on (the
    language server, a library caller, --watch) must still free the cycles a batch left."""
    import weakref

    from torchlint import gcpolicy

    assert gcpolicy._one_shot is False  # nothing in this process asked for it
    monkeypatch.setattr(gcpolicy, "_one_shot", one_shot)

    class Node:
        pass

    gc.unfreeze()
    with gcpolicy.batch():
        node = Node()
        node.self = node  # a cycle, garbage once the name is gone
        alive = weakref.ref(node)
        del node
    gc.collect()
    assert (alive() is not None) is one_shot
    gc.unfreeze()
    gc.collect()


def test_the_console_scripts_one_file_check_runs_no_collection(tmp_path):
    """The imports are frozen when done and the lint's survivors when the batch ends: in the
    one-shot process, no collection walks objects that live until the exit (~2.4 ms)."""
    import os
    import subprocess
    import sys
    import textwrap

    (tmp_path / "train.py").write_text((FIXTURES.parent.parent / "examples" / "train_ddp.py").read_text())
    driver = textwrap.dedent("""
        import gc, sys
        from torchlint.entry import main
        collections = []
        gc.callbacks.append(lambda phase, info: phase == "stop" and collections.append(info["generation"]))
        sys.argv = ["torchlint", "check", "train.py", "--no-cache", "-q"]
        try:
            main()
        finally:
            sys.stderr.write(f"COLLECTIONS {len(collections)}\\n")
    """)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # compiling allocates too
    env["PYTHONPATH"] = str(FIXTURES.parent.parent)
    for _ in range(2):  # the first run may compile modules
        done = subprocess.run([sys.executable, "-c", driver], cwd=tmp_path, capture_output=True, text=True,
                              timeout=120, env=env)
    assert done.returncode == 1 and "TL501" in done.stdout, done.stderr
    assert "COLLECTIONS 0" in done.stderr, done.stderr
