"""`torchlint run` end to end: the examples' card rules confirmed with values from the run,
torchrun ranks, runtime-only checks that need real processes, output formats, the monitors'
reach (sitecustomize chaining, DataLoader workers) and that they never change results."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("torch")

from conftest import OFF_SINCE_HELD_OUT  # noqa: E402

pytestmark = pytest.mark.torch

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "run"


def torchlint_run(*args: str, cwd: Path = ROOT, timeout: float = 180) -> subprocess.CompletedProcess:
    """`torchlint run ARGS`; with `--output-format`, the report is written to a file (the
    program owns stdout) and kept as `.report`."""
    options = args[:args.index("--")] if "--" in args else args
    if not any(a.startswith(("--select", "--extend-select")) for a in options):
        args = ("--extend-select", OFF_SINCE_HELD_OUT, *args)  # the programs exercise those rules too
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report"
        extra = ["-o", str(report)] if "--output-format" in args and "-o" not in args else []
        result = subprocess.run([sys.executable, "-m", "torchlint", "run", *extra, *args], cwd=cwd, env=env,
                                capture_output=True, text=True, timeout=timeout)
        result.report = report.read_text(encoding="utf-8") if report.exists() else ""  # type: ignore[attr-defined]
    return result


def torchrun(script: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", str(script), *args]


def findings_of(result: subprocess.CompletedProcess) -> list[dict]:
    try:
        return json.loads(result.report)  # type: ignore[attr-defined]
    except json.JSONDecodeError:
        raise AssertionError(f"not JSON:\n{result.report}\nstderr:\n{result.stderr}") from None  # type: ignore[attr-defined]


def only(findings: list[dict], code: str) -> dict:
    matching = [f for f in findings if f["code"] == code]
    assert len(matching) == 1, findings
    return matching[0]


_CACHE: dict[tuple, subprocess.CompletedProcess] = {}


def run_json(*command: str) -> subprocess.CompletedProcess:
    """Each example runs once per session; several tests read the same run."""
    key = tuple(command)
    if key not in _CACHE:
        _CACHE[key] = torchlint_run("--output-format", "json", "--", *command)
    return _CACHE[key]


CARD_EXAMPLES = {
    "TL101": ("tl101_backward_under_no_grad.py",
              ["grad mode was off at the call", "does not require grad and does not have a grad_fn"]),
    "TL102": ("tl102_data_write_before_backward.py",
              ["`.data` of `2.weight` (1, 16) torch.float32 was written after the forward at",
               "while AddmmBackward0 held it for backward"]),
    "TL201": ("tl201_float_labels.py",
              ["was torch.float32 of shape (16,) (input (16, 3))", "expected target dtype to be Long"]),
    "TL301": ("tl301_worker_rng.py",
              ["2 workers of this DataLoader drew identical first values from self.rng (numpy.random.Generator): "
               "[0.63696169, 0.26978671"]),
}


@pytest.mark.parametrize("code", sorted(CARD_EXAMPLES))
def test_card_rule_examples_are_confirmed(code):
    script, evidence = CARD_EXAMPLES[code]
    result = run_json(sys.executable, str(EXAMPLES / script))
    assert result.returncode == 1, result.stderr
    finding = only(findings_of(result), code)
    assert finding["filename"] == str(EXAMPLES / script)
    assert finding["runtime"]["verdict"] == "confirmed" and finding["runtime"]["hits"] >= 1
    for text in evidence:
        assert text in finding["runtime"]["evidence"]


def test_torchrun_uneven_counts_confirm_tl501_with_per_rank_counts():
    result = run_json(*torchrun(EXAMPLES / "tl501_ddp_counts.py"))
    assert result.returncode == 1, result.stderr
    runtime = only(findings_of(result), "TL501")["runtime"]
    assert runtime["verdict"] == "confirmed"
    assert "rank 0 counted 8, rank 1 counted 16 (of 24)" in runtime["evidence"]
    assert "rank 0 +50.0%, rank 1 -25.0%" in runtime["evidence"]
    assert "3 Python process(es) monitored" in result.stderr  # torchrun and its two ranks


def test_torchrun_even_counts_stay_silent():
    result = run_json(*torchrun(EXAMPLES / "tl501_ddp_counts.py", "--balanced"))
    assert result.returncode == 0, result.stderr
    findings = findings_of(result)
    assert only(findings, "TL501")["runtime"]["verdict"] == "not-observed"
    assert "every rank counted the same number of elements at each call (8)" in \
        only(findings, "TL501")["runtime"]["evidence"]
    assert not [f for f in findings if f["runtime"]["verdict"] == "confirmed"]  # no TL520: DistributedSampler


FORKED_RANKS = """
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def train(rank, store_path, shard):
    dist.init_process_group("gloo", init_method=f"file://{store_path}", rank=rank, world_size=2)
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(64, 8), torch.randint(0, 3, (64,)))
    sampler = DistributedSampler(data, shuffle=False) if shard else None
    loader = DataLoader(data, batch_size=16, sampler=sampler)
    model = DDP(nn.Linear(8, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y, reduction="sum").backward()
        opt.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    # Two ranks forked from one process: the same code path as torchrun, without its start-up cost.
    ctx = mp.get_context("fork")
    ranks = [ctx.Process(target=train, args=(r, sys.argv[1], sys.argv[2] == "shard")) for r in range(2)]
    for p in ranks:
        p.start()
    for p in ranks:
        p.join()
    sys.exit(max(p.exitcode for p in ranks))
"""


# The programs with and without a DistributedSampler are TL520's fixtures (tests/fixtures/TL520/run/).


WORKER_SEEDS = """
import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class Noise(Dataset):
    def __len__(self):
        return 32

    def __getitem__(self, idx):
        return torch.from_numpy(np.random.normal(size=4)).float(), idx % 2


def seed_worker(worker_id):
    {seeding}


if __name__ == "__main__":
    model = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(Noise(), batch_size=4, num_workers=2, worker_init_fn=seed_worker, multiprocessing_context="{context}")
    for x, y in loader:
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
"""


@pytest.mark.parametrize("sharding, expected", [("same", ["TL520"]), ("shard", [])])
def test_tl520_sees_models_called_with_keyword_arguments(tmp_path, sharding, expected):
    script = tmp_path / "ranks.py"
    script.write_text(FORKED_RANKS.replace("model(x)", "model(input=x)"), encoding="utf-8")  # Hugging Face style
    result = torchlint_run("--output-format", "json", "--", sys.executable, str(script), str(tmp_path / "store"),
                           sharding, cwd=tmp_path)
    assert [f["code"] for f in findings_of(result)] == expected, result.stderr


@pytest.mark.parametrize("seeding, context, expected", [
    ("np.random.seed(0)", "spawn", ["TL320"]),  # spawned workers load the monitors themselves
    ("np.random.seed(torch.utils.data.get_worker_info().seed % 2**32)", "fork", []),
])
def test_tl320_identical_worker_streams(tmp_path, seeding, context, expected):
    script = tmp_path / "workers.py"
    script.write_text(WORKER_SEEDS.format(seeding=seeding, context=context), encoding="utf-8")
    result = torchlint_run("--output-format", "json", "--", sys.executable, str(script), cwd=tmp_path)
    findings = findings_of(result)
    assert [f["code"] for f in findings] == expected, result.stderr
    if expected:
        assert findings[0]["location"]["row"] == 23  # the DataLoader(...) line
        assert "2 DataLoader workers drew identical first values from numpy.random" in findings[0]["message"]
    assert result.returncode == (1 if expected else 0)


def test_tl301_example_does_not_double_report_as_tl320():
    result = run_json(sys.executable, str(EXAMPLES / "tl301_worker_rng.py"))
    assert [f["code"] for f in findings_of(result)] == ["TL301"]


LOSSES = """
import sys
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(128, 8), torch.randint(0, 3, (128,)))
    loader = DataLoader(data, batch_size=16, shuffle=True, num_workers=2)
    model = nn.Sequential(nn.Linear(8, 32), nn.Dropout(0.3), nn.ReLU(), nn.Linear(32, 3))
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    for step, (x, y) in enumerate(loader):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        print(f"step {step} {loss.item().hex()} {model[0].weight.sum().item().hex()}", flush=True)


if __name__ == "__main__":
    main()
"""


def test_monitors_do_not_change_results(tmp_path):
    script = tmp_path / "losses.py"
    script.write_text(LOSSES, encoding="utf-8")
    plain = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True, cwd=tmp_path)
    result = torchlint_run("--max-steps", "6", "--", sys.executable, str(script), cwd=tmp_path)
    assert result.returncode == 123, result.stderr  # the budget cut the program short
    assert "All checks passed!" in result.stderr
    # The program's stdout is its own; the budget ends it inside the 6th step, before that step's print.
    assert result.stdout.splitlines() == plain.stdout.splitlines()[:5]
    assert "stopped after 6 optimizer step(s) by the step budget (--max-steps 6;" in result.stderr
    whole = torchlint_run("--full", "--", sys.executable, str(script), cwd=tmp_path)
    assert whole.returncode == 0, whole.stderr
    assert whole.stdout == plain.stdout


def test_existing_sitecustomize_still_runs(tmp_path):
    site_dir = tmp_path / "site"
    site_dir.mkdir()
    (site_dir / "sitecustomize.py").write_text("import os\nos.environ['CUSTOMIZED'] = 'yes'\n", encoding="utf-8")
    script = tmp_path / "probe.py"
    script.write_text("import os, sys\nprint(os.environ.get('CUSTOMIZED'), '_torchlint_monitor' in sys.modules)\n",
                      encoding="utf-8")
    env_path = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([str(site_dir)] + ([env_path] if env_path else []))
    try:
        result = torchlint_run("--", sys.executable, str(script), cwd=tmp_path)
    finally:
        if env_path is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = env_path
    assert result.returncode == 0, result.stderr
    assert result.stdout == "yes True\n"
    assert "1 Python process(es) monitored" in result.stderr


def test_only_executed_files_are_linted(tmp_path):
    (tmp_path / "unused.py").write_text("import torch\nx = torch.load('w.pt')\n", encoding="utf-8")
    script = tmp_path / "main.py"
    script.write_text("import helper\nhelper.go()\n", encoding="utf-8")
    (tmp_path / "helper.py").write_text(textwrap.dedent("""
        import torch

        def go():
            with torch.no_grad():
                if False:
                    loss = torch.ones(1) * 2
                    loss.backward()
    """), encoding="utf-8")
    result = torchlint_run("--output-format", "json", "--", sys.executable, "main.py", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    [finding] = findings_of(result)
    assert finding["code"] == "TL101" and finding["filename"] == str(tmp_path / "helper.py")
    assert finding["runtime"] == {"verdict": "not-reached", "evidence": "no backward/grad call ran at this line",
                                  "hits": 0}
    quiet = torchlint_run("--confirmed-only", "--output-format", "json", "--", sys.executable, "main.py",
                          cwd=tmp_path)
    assert quiet.returncode == 0 and findings_of(quiet) == []


def test_commands_that_cannot_run(tmp_path):
    missing = torchlint_run("--", "no-such-program-xyz", cwd=tmp_path)
    assert missing.stdout == ""
    assert missing.returncode == 2 and "cannot run 'no-such-program-xyz'" in missing.stderr
    not_python = torchlint_run("--", "true", cwd=tmp_path)
    assert not_python.returncode == 0
    assert "no Python process of the command loaded the monitors" in not_python.stderr
    bad_option = torchlint_run("--select", "TL999", "--", "true", cwd=tmp_path)
    assert bad_option.returncode == 2 and "TL999" in bad_option.stderr


def test_selectors_apply_to_runtime_checks():
    """`run` selects over static rules and runtime checks with check's one selector."""
    from torchlint.runtime.command import RUNTIME_SELECTOR, SELECTOR
    from torchlint.selection import STATIC, SelectionError, SelectionLayer

    assert SELECTOR.parse(["TL320,tl1"]) == ["TL320", "TL1"]
    with pytest.raises(SelectionError):
        STATIC.parse(["TL320"])  # a runtime-only code is no static selector

    def runtime_enabled(code, select, extend, ignore):
        return code in RUNTIME_SELECTOR.resolve([SelectionLayer(select, extend, ignore)])

    assert runtime_enabled("TL320", None, [], [])
    assert not runtime_enabled("TL320", None, [], ["TL320"])
    assert not runtime_enabled("TL320", ["TL1"], [], [])
    assert runtime_enabled("TL320", ["TL1"], ["TL32"], [])
    assert runtime_enabled("TL320", ["ALL"], [], ["TL3"]) is False
    assert runtime_enabled("TL320", ["ALL"], [], ["TL1"])
    # On the static side a runtime-only prefix selects nothing, as if it were left out.
    assert STATIC.resolve([SelectionLayer(["TL320", "TL1"])]) == STATIC.resolve([SelectionLayer(["TL1"])])
    assert STATIC.resolve([SelectionLayer(["TL320"])]) == set()


def test_pytest_fixture(tmp_path):
    (tmp_path / "test_model.py").write_text(textwrap.dedent("""
        import torch
        import torch.nn as nn

        def train_step(model):
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            loss = nn.functional.cross_entropy(model(torch.randn(8, 4)), torch.randint(0, 2, (8,)))
            loss.backward()
            opt.step()

        def test_healthy(torchlint_runtime):
            train_step(nn.Sequential(nn.Linear(4, 2), nn.Dropout(0.1)))
            torchlint_runtime.assert_clean()

        def test_left_in_eval_mode(torchlint_runtime):
            train_step(nn.Sequential(nn.Linear(4, 2), nn.Dropout(0.1)).eval())
            torchlint_runtime.assert_clean()
    """), encoding="utf-8")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    # Installed, the plugin loads through its `pytest11` entry point; here it is named explicitly
    # (and autoloading is off so it cannot be registered twice).
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "torchlint.runtime.pytest_plugin",
                             "-p", "no:cacheprovider", "test_model.py"],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert "1 failed, 1 passed" in result.stdout, result.stdout
    assert "TL720 backward ran through the forward of Sequential" in result.stdout



MORE_RULES = """
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 16)
        self.b = nn.Linear(16, 3)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        h = F.dropout(self.a(x).relu(), p=0.1)  # TL402
        return self.b(self.drop(h))


def train(model, opt, x, y):
    for epoch in range(3):
        for i in range(2):
            loss = F.cross_entropy(model(x), y)
            loss.backward()  # TL103
            opt.step()
        model.eval()  # TL704
        with torch.no_grad():
            probabilities = F.softmax(model(x).view(2, 8, 3))  # TL403


def misplaced_zero_grad(model, opt, x, y):
    for i in range(2):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.zero_grad()  # TL104
        opt.step()


if __name__ == "__main__":
    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(16, 8), torch.randint(0, 3, (16,))
    train(model, opt, x, y)
    misplaced_zero_grad(model.train(), opt, x, y)
"""

SAFE_RUNS = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 3)

    def forward(self, x):
        return F.dropout(self.a(x), p=0.1)  # TL402: never runs in eval mode here


if __name__ == "__main__":
    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(16, 8), torch.randint(0, 3, (16,))
    for step in range(3):
        opt.zero_grad()
        logits = model(x)
        probabilities = F.softmax(logits)  # TL403: 2-D, so the implicit dim is 1
        F.cross_entropy(logits, y).backward()
        opt.step()
"""


def row_of(text: str, marker: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if line.endswith(f"# {marker}")
                or f"# {marker}:" in line)


def verdicts_of(tmp_path: Path, text: str, expected_exit: int) -> dict[tuple[str, int], dict]:
    script = tmp_path / "script.py"
    script.write_text(text, encoding="utf-8")
    result = torchlint_run("--output-format", "json", "--", sys.executable, str(script), cwd=tmp_path)
    assert result.returncode == expected_exit, result.stderr
    return {(f["code"], f["location"]["row"]): f["runtime"] for f in findings_of(result)}


def test_more_static_rules_confirmed(tmp_path):
    verdicts = verdicts_of(tmp_path, MORE_RULES, 1)
    expected = {
        "TL103": "backward added to gradients left over from the previous optimizer step",
        "TL104": "this zero_grad ran after the backward and before the optimizer step at",
        "TL402": "dropout(p=0.1) was active while Net was in eval mode",
        "TL403": "got a 3-D input (2, 8, 3) and no dim, so it normalized over dim 0",
        "TL704": "still in eval mode from this eval() call: its Dropout layer(s)",
    }
    for code, evidence in expected.items():
        runtime = verdicts[(code, row_of(MORE_RULES, code))]
        assert runtime["verdict"] == "confirmed" and evidence in runtime["evidence"], (code, runtime)
    assert not [code for code, _ in verdicts if code == "TL720"]  # TL704 confirmed it: no runtime twin


def test_more_static_rules_not_observed(tmp_path):
    verdicts = verdicts_of(tmp_path, SAFE_RUNS, 0)
    assert verdicts[("TL402", row_of(SAFE_RUNS, "TL402"))] == {
        "verdict": "not-observed", "evidence": "ran 3 time(s), always in train mode", "hits": 3}
    tl403 = verdicts[("TL403", row_of(SAFE_RUNS, "TL403"))]
    assert tl403["verdict"] == "not-observed" and "inputs (16, 3)" in tl403["evidence"]
