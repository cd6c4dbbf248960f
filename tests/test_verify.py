"""`--verify`: every probe's confirmed path, a not-reproduced case, timeouts, crashes,
missing torch, caching, and the output shapes. Needs torch (CPU is enough)."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("torch")

from test_cli import write  # noqa: E402
from test_outputs import SCHEMA_PATH  # noqa: E402
from torchlint.verify import runner  # noqa: E402
from torchlint.verify.plan import PROBED  # noqa: E402
from torchlint.verify.runner import ProbeWorker  # noqa: E402

pytestmark = pytest.mark.torch

# Values a rule would extract from the flagged code, for each probe's confirmed path.
CONFIRM_PARAMS: dict[str, dict] = {
    "TL101": {"mode": "torch.no_grad", "call": "backward"},
    "TL108": {"mode": "no_grad"},
    "TL201": {"dtype": "torch.float32", "loss": "nn.CrossEntropyLoss"},
    "TL202": {"method": "float"},
    "TL204": {"source": "np.random.rand"},
    "TL301": {"rng": "np.random.default_rng"},
    "TL304": {"conflict": "sampler"},
    "TL401": {"activation": "softmax", "loss": "F.cross_entropy"},
    "TL601": {"explicit_false": True},
}


@pytest.fixture(scope="module")
def worker():
    w = ProbeWorker(timeout=240, limit_memory=True)
    w.start()
    yield w
    w.stop()


@pytest.mark.parametrize("code", sorted(PROBED))
def test_probe_confirms_on_cpu(worker, code):
    result = worker.run({"code": code, "params": CONFIRM_PARAMS.get(code, {}), "snippet": None, "device": "cpu"})
    if code == "TL801":  # create-then-move costs nothing on the CPU
        assert result["verdict"] == "not-reproduced", result
        assert "accelerator" in result["evidence"]
        return
    assert result["verdict"] == "confirmed", result
    assert result["evidence"]


def test_every_probed_rule_has_a_probe_and_others_say_why(worker):
    sys.path.insert(0, str(Path(runner.__file__).parent))
    try:
        import probes  # the worker's module; importing it here needs torch, which we have
    finally:
        sys.path.pop(0)
    assert set(probes.PROBES) == set(PROBED)


def test_global_numpy_rng_is_not_reproduced(worker):
    result = worker.run({"code": "TL301", "params": {"rng": "global-numpy"}, "snippet": None, "device": "cpu"})
    assert result["verdict"] == "not-reproduced", result
    assert "different streams" in result["evidence"]


def test_snippets_run_as_written(worker):
    ok = worker.run({"code": "TL106", "params": {}, "device": "cpu",
                     "snippet": "torch.tensor([1, 2, 3], requires_grad=True)"})
    assert ok["verdict"] == "confirmed" and "floating point" in ok["evidence"]
    fine = worker.run({"code": "TL106", "params": {}, "device": "cpu",
                       "snippet": "torch.tensor([1.0, 2.0], requires_grad=True)"})
    assert fine["verdict"] == "not-reproduced"
    legacy = worker.run({"code": "TL205", "params": {}, "device": "cpu", "snippet": "torch.Tensor(3)"})
    assert legacy["verdict"] == "confirmed" and "(3,)" in legacy["evidence"]


def test_memory_blowup_is_an_error_not_evidence(worker):
    result = worker.run({"code": "TL205", "params": {}, "device": "cpu", "snippet": "torch.Tensor(10 ** 11)"})
    assert result["verdict"] == "error", result
    # The worker survives (or is restarted) for the next probe.
    assert worker.run({"code": "TL105", "params": {}, "snippet": None, "device": "cpu"})["verdict"] == "confirmed"


CRASHY_WORKER = textwrap.dedent("""
    import json, os, signal, sys, time
    print(json.dumps({"torch": "fake", "cuda": False}), flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        if req["code"] == "CRASH":
            os.kill(os.getpid(), signal.SIGSEGV)
        if req["code"] == "HANG":
            time.sleep(60)
        print(json.dumps({"id": req["id"], "verdict": "confirmed", "evidence": "ok"}), flush=True)
""")


def test_timeout_and_crash_become_errors_and_the_run_goes_on(tmp_path):
    script = tmp_path / "crashy_worker.py"
    script.write_text(CRASHY_WORKER)
    w = ProbeWorker(timeout=2, limit_memory=True, script=script)
    w.start()
    try:
        hang = w.run({"code": "HANG", "device": "cpu"})
        assert hang == {"verdict": "error", "evidence": "the probe timed out after 2s"}
        crash = w.run({"code": "CRASH", "device": "cpu"})
        assert crash["verdict"] == "error" and "SIGSEGV" in crash["evidence"]
        assert w.run({"code": "OK", "device": "cpu"}) == {"verdict": "confirmed", "evidence": "ok"}
    finally:
        w.stop()


def test_worker_environment_has_no_secrets(monkeypatch, tmp_path):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "hunter2")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_x")
    env = ProbeWorker(timeout=1, limit_memory=True)._env(str(tmp_path))
    assert "AWS_SECRET_ACCESS_KEY" not in env and "GITHUB_TOKEN" not in env
    assert env["HOME"] == str(tmp_path)


SOURCE = textwrap.dedent("""\
    import torch
    import torch.nn.functional as F

    with torch.no_grad():
        loss = F.cross_entropy(model(x), y)
        loss.backward()
    a = torch.tensor([1, 2, 3], requires_grad=True)
    b = torch.tensor([4, 5], requires_grad=True)
    c = torch.tensor([1, 2, 3], requires_grad=True)
    m = torch.zeros(3).to(device)
    state = torch.load("ckpt.pt")
""")


def test_cli_verify_json_sarif_statistics(tmp_path, run_cli):
    import jsonschema

    write(tmp_path, "train.py", SOURCE)
    code, out, err = run_cli("check", "train.py", "--verify", "--device", "cpu", "--output-format", "json")
    assert code == 1, err
    findings = {(f["code"], f["location"]["row"]): f for f in json.loads(out)}
    tl101 = findings[("TL101", 6)]["verify"]
    assert tl101["verdict"] == "confirmed"
    assert tl101["runs"][0]["device"] == "cpu" and tl101["runs"][0]["torch"].startswith("2.")
    assert "does not require grad" in tl101["runs"][0]["evidence"]
    assert findings[("TL106", 7)]["verify"]["runs"][0]["evidence"].startswith("`torch.tensor([1, 2, 3]")
    assert findings[("TL801", 10)]["verify"]["verdict"] == "not-reproduced"

    code, out, _ = run_cli("check", "train.py", "--verify", "--device", "cpu", "--output-format", "sarif")
    doc = json.loads(out)
    jsonschema.validate(doc, json.loads(SCHEMA_PATH.read_text()))
    props = [r["properties"]["verify"] for r in doc["runs"][0]["results"]]
    assert all(p["runs"] for p in props)

    code, out, _ = run_cli("check", "train.py", "--verify", "--device", "cpu", "--statistics")
    assert "verify: confirmed 5, not-reproduced 1" in out

    code, out, _ = run_cli("check", "train.py", "--verify", "--device", "cpu", "--verified-only",
                           "--output-format", "concise")
    assert "TL801" not in out and "TL101" in out

    code, out, _ = run_cli("check", "train.py", "--verify", "--device", "cpu", "--select", "TL101")
    assert "verified: confirmed on torch 2." in out and "(cpu): RuntimeError: element 0" in out


def test_identical_probes_run_once_and_verdicts_are_cached(tmp_path, monkeypatch, run_cli):
    write(tmp_path, "train.py", SOURCE)
    calls = []
    original = ProbeWorker.run
    monkeypatch.setattr(ProbeWorker, "run", lambda self, req: calls.append(req) or original(self, req))
    run_cli("check", "train.py", "--verify", "--device", "cpu", "--select", "TL106")
    assert len(calls) == 2  # three findings, two distinct snippets
    calls.clear()

    def no_start(self):
        raise AssertionError("the worker should not start: every verdict is cached")
    monkeypatch.setattr(ProbeWorker, "start", no_start)
    code, out, _ = run_cli("check", "train.py", "--verify", "--device", "cpu", "--select", "TL106",
                           "--output-format", "json")
    assert calls == [] and all(f["verify"]["verdict"] == "confirmed" for f in json.loads(out))


def test_missing_torch_exits_2(tmp_path, monkeypatch, run_cli):
    write(tmp_path, "train.py", SOURCE)
    real = runner.importlib.util.find_spec
    monkeypatch.setattr(runner.importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    code, _, err = run_cli("check", "train.py", "--verify")
    assert code == 2 and "--verify needs torch" in err and "CPU wheel index" in err
    assert run_cli("check", "train.py", "--verified-only")[0] == 2


def test_cuda_requested_without_gpu_is_skipped(tmp_path, run_cli):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present: test_cuda_probes covers this machine")
    write(tmp_path, "train.py", SOURCE)
    out = json.loads(run_cli("check", "train.py", "--verify", "--device", "cuda", "--select", "TL101",
                             "--output-format", "json")[1])
    run = out[0]["verify"]["runs"][0]
    assert run["device"] == "cuda" and run["verdict"] == "skipped" and "CUDA requested" in run["evidence"]


def test_cuda_probes(tmp_path, run_cli):
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU on this machine: the CUDA path of --verify is checked on GPU hosts only")
    write(tmp_path, "train.py", SOURCE)
    out = json.loads(run_cli("check", "train.py", "--verify", "--device", "auto", "--output-format", "json")[1])
    for f in out:
        devices = {r["device"]: r["verdict"] for r in f["verify"]["runs"]}
        assert set(devices) == {"cpu", "cuda"}
    tl801 = next(f for f in out if f["code"] == "TL801")
    assert {r["device"]: r["verdict"] for r in tl801["verify"]["runs"]}["cuda"] == "confirmed"


def test_without_findings_verify_still_checks_torch(tmp_path, run_cli):
    write(tmp_path, "ok.py", "import torch\n")
    assert run_cli("check", "ok.py", "--verify")[0] == 0
    assert os.path.exists(tmp_path / "ok.py")
