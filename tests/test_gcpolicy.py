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
