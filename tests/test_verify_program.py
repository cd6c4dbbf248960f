"""`--verify` runs a file as its program once, however many of its findings need it (issue
19): every flagged line is observed in the same run, a timeout is paid once per file, and
what the program changes in torch reaches none of the file's later probes. One sandboxed
--verify run serves every test here."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from torchlint import catalog
from torchlint.checker import check_source
from torchlint.diagnostics import Finding

pytestmark = [pytest.mark.torch,
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox is Linux-only")]

# `collections` is beyond a slice's allow-list: only the file run as its program reaches the calls.
THREE = '''import collections

import torch


def sized(n):
    return torch.Tensor(collections.Counter([n, n])[n] + n)


def valued(n):
    return torch.Tensor([collections.Counter([n])[n], n])


def twice(n):
    return torch.Tensor(collections.Counter([n, n])[n] * n)


if __name__ == "__main__":
    sized(3)
    valued(4)
    twice(5)
'''
# The program never reaches its calls: it loops until its share of the time runs out.
SLOW = THREE.replace('if __name__ == "__main__":\n', 'if __name__ == "__main__":\n    while True:\n        pass\n')
# The program changes torch's default dtype, then reaches the first call; the method's call
# is never reached, so its probe runs: on a torch the program did not touch.
LEAK = '''import collections

import torch


def sized(n):
    return torch.Tensor(collections.Counter([n, n])[n] + n)


class Net:
    def build(self):
        return torch.Tensor(2, 3)


if __name__ == "__main__":
    torch.set_default_dtype(torch.float64)
    sized(3)
'''


@pytest.fixture(scope="module")
def verified(tmp_path_factory) -> tuple[dict[str, list[Finding]], dict[str, int], list[str]]:
    """(findings by file name, program runs by file name, the program requests that ran
    on their own), from one --verify run over the three files."""
    from torchlint.verify import runner
    from torchlint.verify.process import ProbeWorker

    root = tmp_path_factory.mktemp("project")
    rules = [catalog.by_code()["TL205"]]
    by_file: dict[str, list[Finding]] = {}
    for name, text in (("three.py", THREE), ("slow.py", SLOW), ("leak.py", LEAK)):
        (root / name).write_text(text)
        by_file[name] = [f for f in check_source(str(root / name), text.encode(), rules) if f.code == "TL205"]
    runs: dict[str, int] = {}
    alone: list[str] = []
    program_run, run = ProbeWorker.run_program, ProbeWorker.run

    def counted(self, request, timeout=None):  # type: ignore[no-untyped-def]
        name = request["import"]["file"]
        runs[name] = runs.get(name, 0) + 1
        return program_run(self, request, timeout)

    def single(self, request, timeout=None):  # type: ignore[no-untyped-def]
        if (request.get("import") or {}).get("kind") == "program":
            alone.append(request["import"]["file"])
        return run(self, request, timeout)

    findings = [f for found in by_file.values() for f in found]
    texts = {f.path: Path(f.path).read_text() for f in findings}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ProbeWorker, "run_program", counted)
        patch.setattr(ProbeWorker, "run", single)
        # 6 s a request: a program gets a third of it, so the loop's timeout is 2 s.
        runner.verify_findings(findings, device="cpu", timeout=6, sources=texts.get, project=str(root))
    return by_file, runs, alone


def _runs(findings: list[Finding]) -> list[dict]:
    return [f.verify["runs"][0] for f in findings]  # type: ignore[index]


def test_three_findings_of_a_file_share_one_program_run(verified):
    by_file, runs, alone = verified
    assert len(by_file["three.py"]) == 3
    assert runs["three.py"] == 1 and not alone
    got = {(r["verdict"], r["source"]) for r in _runs(by_file["three.py"])}
    assert got == {("confirmed", "your-code"), ("not-reproduced", "your-code")}, _runs(by_file["three.py"])
    evidence = sorted(r["evidence"] for r in _runs(by_file["three.py"]))
    # Each finding judged at its own line, with its own run's values.
    assert any("the call with 5 returned" in e for e in evidence), evidence
    assert any("the call with 10 returned" in e for e in evidence), evidence
    assert all(e.startswith("ran three.py as its program") for e in evidence), evidence


def test_a_program_that_times_out_pays_the_timeout_once_and_each_finding_falls_back(verified):
    by_file, runs, _ = verified
    assert len(by_file["slow.py"]) == 3
    assert runs["slow.py"] == 1
    for run in _runs(by_file["slow.py"]):
        assert run["source"] == "probe", run
        assert "the program stopped before the flagged line with TimeoutError" in run["evidence"], run


def test_the_programs_changes_to_torch_reach_no_later_probe_of_the_file(verified):
    by_file, runs, _ = verified
    assert runs["leak.py"] == 1
    first, method = sorted(by_file["leak.py"], key=lambda f: f.row)
    assert first.verify["runs"][0]["source"] == "your-code"  # type: ignore[index]
    # The program ran under float64 (its own change); the method's probe did not.
    assert "float64" in first.verify["runs"][0]["evidence"], first.verify  # type: ignore[index]
    probe = method.verify["runs"][0]  # type: ignore[index]
    # (TL205 is off by default, so its probe's demonstration is kept but not claimed: verify/claims.py.)
    assert probe["source"] == "probe" and probe["verdict"] in ("demonstrated", "skipped"), probe
    assert "torch.float32" in probe["evidence"] and "float64" not in probe["evidence"], probe
