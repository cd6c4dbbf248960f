"""TL501's fact probe runs 2 gloo ranks. gloo's TCP setup can abort a rank on a busy machine
(it did once in CI), which says nothing about the hazard: the probe tries up to 3 times, and
when every try fails it raises with what the failed rank printed. The ranks are faked here;
tests/test_verify_rules.py runs the real ones."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
mp = pytest.importorskip("torch.multiprocessing")

from torchlint.verify import evidence_distributed as evidence  # noqa: E402

pytestmark = pytest.mark.torch


def _fake_ranks(monkeypatch, failures: int) -> list[str]:
    """start_processes whose first `failures` calls end with rank 1 aborted after printing."""
    stores: list[str] = []

    def start_processes(fn, args, nprocs, join, start_method):
        _world, store, out, _ignore, _kind = args
        stores.append(store)
        if len(stores) <= failures:
            with open(f"{store}.rank1.err", "w", encoding="utf-8") as f:
                f.write("terminate called after throwing an instance of 'gloo::EnforceNotMet'\n")
            raise mp.ProcessExitedException("process 1 terminated with signal SIGABRT", error_index=1,
                                            error_pid=1, exit_code=-6, signal_name="SIGABRT")
        torch.save(torch.ones(4, 3), out)

    monkeypatch.setattr(mp, "start_processes", start_processes)
    return stores


def test_a_rank_that_aborts_once_is_run_again_with_a_fresh_store(monkeypatch):
    stores = _fake_ranks(monkeypatch, failures=2)
    assert torch.equal(evidence._ddp_gradient(-100, "ce"), torch.ones(4, 3))
    assert len(stores) == 3 and len(set(stores)) == 3  # a file store serves one process group only


def test_three_failed_tries_raise_with_what_the_rank_printed(monkeypatch):
    stores = _fake_ranks(monkeypatch, failures=3)
    with pytest.raises(RuntimeError) as raised:
        evidence._ddp_gradient(-100, "ce")
    assert len(stores) == 3
    assert "SIGABRT in 3 tries" in str(raised.value)
    assert "gloo::EnforceNotMet" in str(raised.value)
