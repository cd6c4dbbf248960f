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
