"""TL308's runtime judge: it reads the batch fingerprints TL520's monitor records on each rank
and can say "no" (pure data, no torch, no run)."""

from __future__ import annotations

from pathlib import Path

from torchlint.rules.data.ddp_loader_without_sampler import run_verdict
from torchlint.runtime.judging import Observation

SITE = ["/p/train.py", 30, 0, 10, 40]


def _batches(hashes_by_rank: dict[int, list[str]], world: int = 2) -> Observation:
    events = [{"kind": "batch", "site": SITE, "rank": rank, "world": world, "hash": h, "index": i + 1}
              for rank, hashes in hashes_by_rank.items() for i, h in enumerate(hashes)]
    return Observation(events)


def _judge(obs: Observation):
    return run_verdict(obs, "/p/train.py", (11, 11), Path("/p"))


def test_identical_batches_on_every_rank_confirm():
    result = _judge(_batches({0: ["a", "b", "c"], 1: ["a", "b", "c"]}))
    assert result.verdict == "confirmed"
    assert "all 2 ranks fed the model identical batches in the 3 training forward(s)" in result.evidence
    assert "train.py:30" in result.evidence


def test_different_batches_say_no():
    result = _judge(_batches({0: ["a", "b"], 1: ["a", "z"]}))
    assert result.verdict == "not-observed"
    assert "different batches" in result.evidence


def test_a_run_without_a_process_group_of_two_ranks_says_no():
    assert _judge(_batches({0: ["a", "b"]}, world=1)).verdict == "not-observed"
    assert _judge(Observation([])).verdict == "not-observed"


def test_the_examples_ddp_script_is_flagged_and_the_clean_one_is_not():
    from conftest import lint_file

    examples = Path(__file__).resolve().parent.parent / "examples"
    assert [(f.row, f.code) for f in lint_file(examples / "train_ddp.py", {"TL308"})] == [(49, "TL308")]
    assert lint_file(examples / "train_clean.py", {"TL308"}) == []
