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
from torchlint.records import Verdict, Verification  # noqa: E402

pytestmark = pytest.mark.torch

# Facts a rule would extract, for each fact probe's `demonstrated` path, and (where the
# facts can make the hazard absent) the facts that make it come out the other way.
DEMONSTRATE_FACTS: dict[str, dict] = {
    "TL101": {"mode": "torch.no_grad", "call": "backward"},
    "TL108": {"mode": "no_grad"},
    "TL201": {"dtype": "torch.float32", "loss": "nn.CrossEntropyLoss"},
    "TL202": {"method": "float"},
    "TL204": {"source": "np.random.rand", "converter": "torch.from_numpy"},
    "TL301": {"rng": "np.random.default_rng", "num_workers": 2},
    "TL302": {},
    "TL303": {"num_workers": 4, "iterations": 10},
    "TL304": {"conflict": "sampler"},
    "TL401": {"activation": "softmax", "loss": "F.cross_entropy"},
    "TL402": {"function": "dropout", "p": 0.5},
    "TL501": {"loss": "F.cross_entropy", "explicit": False},
    "TL502": {"seed_per_epoch": False},
    "TL601": {"explicit_false": True},
}
FLIP_FACTS: dict[str, tuple[dict, str]] = {
    "TL202": ({"method": "cpu"}, "not-reproduced"),
    "TL301": ({"rng": "np.random.default_rng", "num_workers": 1}, "not-reproduced"),
    "TL302": ({"context": "fork"}, "not-reproduced"),
    "TL303": ({"num_workers": 4, "iterations": 1}, "not-reproduced"),
    "TL402": ({"function": "dropout", "p": 0.0}, "not-reproduced"),
    "TL501": ({"loss": "nn.MSELoss", "explicit": True}, "not-reproduced"),
    "TL502": ({"seed_per_epoch": True}, "not-reproduced"),
    "TL601": ({"explicit_false": False}, "not-applicable"),
}


@pytest.fixture(scope="module")
def worker():
    w = ProbeWorker(timeout=240, limit_memory=True)
    w.start()
    yield w
    w.stop()


def _probe(worker, code, facts, device="cpu"):
    return worker.run({"code": code, "facts": facts, "slice": None, "device": device})


@pytest.mark.parametrize("code", sorted(PROBED))
def test_fact_probe_demonstrates_on_cpu(worker, code):
    result = _probe(worker, code, DEMONSTRATE_FACTS.get(code, {}))
    if code in ("TL801", "TL209"):  # the cost (TL801) or the move (TL209) exists only on a GPU
        assert result["verdict"] == "skipped" and "needs CUDA" in result["evidence"], result
        return
    assert result["verdict"] == "demonstrated", result
    assert result["evidence"].startswith("probe"), result  # never passed off as the user's run


@pytest.mark.parametrize("code", sorted(FLIP_FACTS))
def test_fact_probe_comes_out_the_other_way(worker, code):
    facts, verdict = FLIP_FACTS[code]
    result = _probe(worker, code, facts)
    assert result["verdict"] == verdict, result


def test_every_probed_rule_has_a_probe_and_others_say_why(worker):
    sys.path.insert(0, str(Path(runner.__file__).parent))
    try:
        import probes  # the worker's module; importing it here needs torch, which we have
    finally:
        sys.path.pop(0)
    assert set(probes.PROBES) == set(PROBED)


# Real findings whose facts decide a fact probe's verdict: (code the rule flags whose probe
# shows the hazard, code the rule also flags whose facts make it absent). Each file is linted,
# and its finding goes through --verify's own path (plan, worker, probe).
FINDING_PAIRS: dict[str, tuple[str, str]] = {
    "TL302": ("from torch.utils.data import DataLoader\n"
              "loader = DataLoader(list(range(8)), num_workers=2)\nfor batch in loader:\n    pass\n",
              "from torch.utils.data import DataLoader\n"
              "loader = DataLoader(list(range(8)), num_workers=2, multiprocessing_context='fork')\n"
              "for batch in loader:\n    pass\n"),
    "TL303": ("import torch\ndef train(ds):\n    for epoch in range(10):\n"
              "        for b in torch.utils.data.DataLoader(ds, num_workers=4):\n            pass\n",
              "import torch\ndef train(ds):\n    for epoch in range(1):\n"
              "        for b in torch.utils.data.DataLoader(ds, num_workers=4):\n            pass\n"),
    "TL402": ("import torch.nn as nn\nimport torch.nn.functional as F\nclass M(nn.Module):\n"
              "    def forward(self, x):\n        return F.dropout(x, 0.2)\n",
              "import torch.nn as nn\nimport torch.nn.functional as F\nclass M(nn.Module):\n"
              "    def forward(self, x):\n        return F.dropout(x, p=0.0)\n"),
    "TL502": ("from torch.utils.data import DataLoader, DistributedSampler\ndef train(ds):\n"
              "    sampler = DistributedSampler(ds)\n    loader = DataLoader(ds, sampler=sampler)\n"
              "    for epoch in range(3):\n        for batch in loader:\n            pass\n",
              "from torch.utils.data import DataLoader, DistributedSampler\ndef train(ds):\n"
              "    for epoch in range(3):\n        sampler = DistributedSampler(ds, seed=epoch)\n"
              "        loader = DataLoader(ds, sampler=sampler)\n        for batch in loader:\n            pass\n"),
}
# The "no" side's extra case: a module-level set_start_method('fork') pins fork for every loader.
FINDING_PAIRS_MORE: dict[str, str] = {
    "TL302": "import torch.multiprocessing as mp\nfrom torch.utils.data import DataLoader\n"
             "mp.set_start_method('fork')\nfor batch in DataLoader(list(range(8)), num_workers=2):\n    pass\n",
}


def _lint(code: str, source: str, path: str):
    from torchlint.checker import check_source
    from torchlint import catalog

    found = [f for f in check_source(path, source.encode(), [catalog.by_code()[code]]) if f.code == code]
    assert len(found) == 1, (code, path, found)
    return found[0]


def test_real_finding_pairs_come_out_both_ways():
    sources = {}
    for code, (yes, no) in FINDING_PAIRS.items():
        sources[f"{code}_yes.py"], sources[f"{code}_no.py"] = yes, no
    for code, no in FINDING_PAIRS_MORE.items():
        sources[f"{code}_no2.py"] = no
    findings = [_lint(path[:5], src, path) for path, src in sources.items()]
    runner.verify_findings(findings, device="cpu", timeout=120, sources=sources.get)
    got = {f.path: f.verify["verdict"] for f in findings}
    evidence = {f.path: f.verify["runs"][0]["evidence"] for f in findings}
    for path, verdict in got.items():
        want = "demonstrated" if path.endswith("_yes.py") else "not-reproduced"
        assert verdict == want, (path, verdict, evidence[path])
    # The evidence quotes the facts read from the code, not the probe's defaults.
    assert "p=0.2" in evidence["TL402_yes.py"] and "p=0 drops nothing" in evidence["TL402_no.py"]
    assert "10 iterations" in evidence["TL303_yes.py"] and "the code's 4" in evidence["TL303_yes.py"]
    assert "fork start method, which the code pins" in evidence["TL302_no2.py"]


def test_tl801_never_flags_a_move_to_the_cpu_and_emits_the_target(worker):
    """`.to("cpu")` of a CPU tensor returns the tensor itself: no finding. A move to a spelled
    device carries it to the probe, which gives no verdict (`skipped: needs CUDA`) without a GPU."""
    from torchlint.checker import check_source
    from torchlint import catalog

    assert check_source("x.py", b"import torch\nm = torch.zeros(3).to('cpu')\n", [catalog.by_code()["TL801"]]) == []
    finding = _lint("TL801", "import torch\nm = torch.zeros(3).to('cuda')\n", "x.py")
    assert finding.probe_params == {"target": "cuda"}
    result = _probe(worker, "TL801", finding.probe_params, "cpu")
    assert result["verdict"] == "skipped" and "'cuda'" in result["evidence"], result


@pytest.mark.parametrize("code", ["TL602", "TL804"])
def test_rules_no_run_can_decide_are_skipped_with_their_reason(code):
    from torchlint import catalog

    source = {"TL602": "import torch\nimport torch.nn as nn\nmodel = nn.Linear(2, 2)\ntorch.save(model, 'm.pt')\n",
              "TL804": "import torch\ndef step(model, x):\n    with torch.autocast('cuda'):\n"
                       "        loss = model(x).sum()\n    loss.backward()\n"}[code]
    finding = _lint(code, source, "x.py")
    runner.verify_findings([finding], device="cpu", timeout=60, sources=lambda _: source)
    assert code not in PROBED
    assert finding.verify["verdict"] == "skipped", finding.verify
    assert finding.verify["runs"][0]["evidence"] == catalog.by_code()[code].evidence.reason


def test_tl602_note_is_true_of_the_installed_torch():
    """The note says a default torch.load refuses a pickled module unless its class is allow-listed."""
    import io

    import torch

    buf = io.BytesIO()
    torch.save(torch.nn.Linear(2, 2), buf)
    buf.seek(0)
    with pytest.raises(Exception, match="Weights only load failed"):
        torch.load(buf)  # noqa: TL601 - the default is what the note is about
    buf.seek(0)
    with torch.serialization.safe_globals([torch.nn.Linear]):
        assert isinstance(torch.load(buf), torch.nn.Linear)  # noqa: TL601 - the default, allow-listed


def test_tl804_note_is_true_of_float16():
    import torch

    assert torch.tensor(2.0**-24, dtype=torch.float16).item() == 2.0**-24
    assert torch.tensor(2.0**-26, dtype=torch.float16).item() == 0.0


def test_tl202_probe_does_not_pass_float64_off_as_cuda(worker):
    result = _probe(worker, "TL202", {"method": "cuda"})
    import torch
    if not torch.cuda.is_available():
        assert result["verdict"] == "skipped" and "CUDA" in result["evidence"], result


def test_tl401_nll_evidence_quotes_nll(worker):
    result = _probe(worker, "TL401", {"activation": "softmax", "loss": "F.nll_loss"})
    assert result["verdict"] == "demonstrated" and "F.nll_loss" in result["evidence"], result


def test_every_parameter_a_rule_emits_is_read_by_its_probe():
    import ast as _ast
    import re

    rules_dir = Path(runner.__file__).parents[1] / "rules"
    probes_src = (Path(runner.__file__).parent / "probes.py").read_text()
    for path in rules_dir.glob("*.py"):
        text = path.read_text()
        code = re.search(r'code = "(TL\d+)"', text)
        if code is None:
            continue
        for call in _ast.walk(_ast.parse(text)):
            for kw in getattr(call, "keywords", []):
                if kw.arg == "params" and isinstance(kw.value, _ast.Dict):
                    for key in kw.value.keys:
                        name = key.value
                        body = probes_src.split(f'@probe("{code.group(1)}")')[1].split("@probe(")[0]
                        assert f'"{name}"' in body, (code.group(1), name)


# The worker's protocol: JSON lines in on stdin, length-prefixed frames out on fd 3.
SEND = """
    import struct
    def send(obj):
        data = json.dumps(obj).encode()
        os.write(3, struct.pack(">I", len(data)) + data)
    def requests():  # the fork server's protocol, answered in this one process
        for line in sys.stdin:
            msg = json.loads(line)
            if msg.get("kind") in ("open", "close"):
                send({"kind": "ready", "layers": []} if msg["kind"] == "open" else {"kind": "closed"})
                continue
            yield msg
"""
CRASHY_WORKER = textwrap.dedent("""
    import json, os, signal, sys, time
""" + SEND + """
    send({"kind": "hello", "torch": "fake", "cuda": False})
    for req in requests():
        if req["code"] == "CRASH":
            os.kill(os.getpid(), signal.SIGSEGV)
        if req["code"] == "HANG":
            time.sleep(60)
        send({"kind": "answer", "id": req["id"], "verdict": "confirmed", "evidence": "ok", "source": "probe"})
""")


def test_timeout_and_crash_become_errors_and_the_run_goes_on(tmp_path):
    script = tmp_path / "crashy_worker.py"
    script.write_text(CRASHY_WORKER)
    w = ProbeWorker(timeout=2, limit_memory=True, script=script)
    w.start()
    try:
        hang = w.run({"code": "HANG", "device": "cpu"})
        assert (hang.verdict, hang.evidence) == ("error", "the probe timed out after 2s")
        crash = w.run({"code": "CRASH", "device": "cpu"})
        assert crash["verdict"] == "error" and "SIGSEGV" in crash["evidence"]
        assert w.run({"code": "OK", "device": "cpu"}) == Verdict("confirmed", "ok", "probe")
    finally:
        w.stop()


SECRET_PROBE_WORKER = textwrap.dedent("""
    import json, os, socket, sys
""" + SEND + """
    try:
        with open(f"/proc/{os.getppid()}/environ", "rb") as fh:
            parent = fh.read()
    except OSError:  # the sandbox: no /proc/<other pid>
        parent = b""
    found = {"parent_env": b"hunter2" in parent, "own_env": "hunter2" in json.dumps(dict(os.environ)),
             "net_isolated": os.environ.get("TORCHLINT_NET_ISOLATED"),
             "interfaces": sorted(name for _, name in socket.if_nameindex())}
    send({"kind": "hello", "torch": "fake", "cuda": False})
    for req in requests():
        send({"kind": "answer", "id": req["id"], "verdict": "confirmed", "evidence": json.dumps(found),
              "source": "probe"})
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_worker_cannot_read_secrets_from_its_parent_or_its_own_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("GITHUB_TOKEN", "hunter2")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "hunter2")
    script = tmp_path / "secret_probe.py"
    script.write_text(SECRET_PROBE_WORKER)
    w = ProbeWorker(timeout=10, limit_memory=True, script=script)
    try:
        info = json.loads(w.run({"code": "X", "device": "cpu"})["evidence"])
    finally:
        w.stop()
    assert info["parent_env"] is False and info["own_env"] is False, info
    if info["net_isolated"] == "1":  # an unprivileged network namespace: loopback only
        assert info["interfaces"] == ["lo"], info


MEMORY_HOG_WORKER = textwrap.dedent("""
    import json, os, sys, time
""" + SEND + """
    send({"kind": "hello", "torch": "fake", "cuda": False})
    for req in requests():
        hog = [bytearray(64 * 2**20) for _ in range(32)]  # 2 GiB, touched
        time.sleep(30)
        send({"kind": "answer", "id": req["id"], "verdict": "confirmed", "evidence": "ok", "source": "probe"})
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the watchdog reads /proc")
def test_memory_watchdog_kills_the_worker_tree_past_the_limit(tmp_path):
    script = tmp_path / "hog.py"
    script.write_text(MEMORY_HOG_WORKER)
    own = int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    limit_mib = own // 2**20 + 400  # the limit covers this process too
    w = ProbeWorker(timeout=60, limit_memory=False, script=script, memory_limit=limit_mib * 2**20)
    w.start()
    try:
        result = w.run({"code": "X", "device": "cpu"})
    finally:
        w.stop()
    assert result["verdict"] == "error" and f"--verify-memory limit of {limit_mib} MiB" in result["evidence"], result


def _finding(code, row, col, end_row, end_col, params=None, path="x.py"):
    from torchlint.diagnostics import Finding
    return Finding(code=code, message="m", path=path, row=row, col=col, end_row=end_row, end_col=end_col,
                   probe_params=params or {})


def test_poisoned_probe_params_never_run(tmp_path):
    """A lint cache entry may carry anything in probe_params: only plain bounded facts
    reach the worker, and nothing in them is evaluated."""
    marker = tmp_path / "pwned"
    payload = f"__import__('os').system('touch {marker}')"
    source = "import torch\nt = torch.FloatTensor(3)\n"
    finding = _finding("TL205", 2, 5, 2, 25, {"snippet": payload, "constructor": payload, "x": {"nested": 1}})
    runner.verify_findings([finding], device="cpu", timeout=120, sources=lambda p: source)
    assert not marker.exists()
    assert finding.verify["verdict"] == "confirmed", finding.verify  # the slice came from the source


HOSTILE = [
    "import os\nn = os.system('true')\nt = torch.FloatTensor(n)",
    "f = open('/etc/passwd')\nt = torch.FloatTensor(len(f.read()))",
    "k = torch.FloatTensor.__class__\nt = torch.FloatTensor(k)",
    "n = 'system'\nf = getattr(torch, n)\nt = torch.FloatTensor(f)",
    "t = torch.FloatTensor(eval('3'))",
    "t = torch.FloatTensor(torch.load('x.pt'))",
    "t = torch.FloatTensor(torch.ones(3 * 10**9))",
    "i = 1\nt = torch.FloatTensor(9**9**9 + i)",
    "import numpy as np\nt = torch.FloatTensor(np.fromfile('x'))",
    "t = torch.FloatTensor(len('a' * 10**9))",
    "n = 3 * 10**9\nt = torch.FloatTensor(torch.ones(n))",
    "t = torch.FloatTensor(torch.zeros((100000, 100000)))",
    "import torch.nn.functional as F\nt = torch.FloatTensor(F.torch.load('x.pt'))",
    "t = torch.FloatTensor(getattr(torch, 'load')('x.pt'))",
    "k = torch.nn.functional.torch._C\nt = torch.FloatTensor(k)",
    "import numpy as np\nk = np.core.os.system('true')\nt = torch.FloatTensor(k)",
    "self = torch\nt = torch.FloatTensor(self.load('x'))",
    "x = torch.ones(3)\nx.numpy().tofile('out')\nt = torch.FloatTensor(x)",
    "g = (i for i in [1])\nb = g.gi_frame.f_globals\nt = torch.FloatTensor(len(b))",
    "k = '{0.sys}'.format(torch)\nt = torch.FloatTensor(len(k))",
    "k = torch.nn.modules.container.operator.attrgetter('sys')(torch)\nt = torch.FloatTensor(k)",
    "d = {}\nk = d.get('__builtins__')\nt = torch.FloatTensor(k)",
    "import numpy as np\nk = np.core.records.fromfile('x')\nt = torch.FloatTensor(k)",
]


@pytest.mark.parametrize("body", HOSTILE)
def test_hostile_slices_are_refused_before_running(body):
    from torchlint.verify.plan import plan

    source = "import torch\n" + body + "\n"
    lines = source.splitlines()
    row = next(i for i, line in enumerate(lines, 1) if line.startswith("t = "))
    end_col = len(lines[row - 1]) + 1
    request, _ = plan(_finding("TL205", row, 5, row, end_col), source)
    assert request is not None and request.variants == () and request.not_self_contained, request


def test_statements_the_flagged_line_does_not_depend_on_are_not_run():
    from torchlint.verify.plan import plan

    source = "import os\nimport torch\nos.system('touch pwned')\nt = torch.FloatTensor(3)\n"
    request, _ = plan(_finding("TL205", 4, 5, 4, 25), source)
    assert request is not None and request.variants and "os" not in request.variants[0], request


HOSTILE_FILE = """import torch
i = 1
n = int(torch.tensor(3e9).item())
a = torch.FloatTensor(torch.ones(3 * 10**9))
b = torch.FloatTensor(9**9**9 + i)
c = torch.FloatTensor(9**9**9 + i + 1)
d = torch.FloatTensor(torch.ones(n))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the memory watchdog reads /proc")
def test_hostile_literals_stay_within_memory_and_are_cheap(tmp_path):
    import subprocess

    write(tmp_path, "hostile.py", HOSTILE_FILE)
    # A child torchlint: the watchdog counts torchlint's own memory, and this test process
    # has grown with every test before it.
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    out = subprocess.run([sys.executable, "-m", "torchlint", "check", "hostile.py", "--verify", "--device", "cpu",
                          "--select", "TL205", "--verify-memory", "768", "--output-format", "json"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600).stdout
    runs = {f["location"]["row"]: f["verify"]["runs"][0] for f in json.loads(out)}
    for row in (4, 5, 6):  # refused before running: the fact probe answers instead
        assert runs[row]["verdict"] == "demonstrated" and "not allowed to run" in runs[row]["evidence"], runs[row]
    # Not a literal: it runs, and the watchdog stops it at the limit.
    assert runs[7]["verdict"] == "error" and "--verify-memory limit of 768 MiB" in runs[7]["evidence"], runs[7]


def test_deep_expression_is_not_a_recursion_error():
    from torchlint.verify.plan import plan

    expr = " + ".join(["1"] * 2500)
    source = f"import torch\nt = torch.FloatTensor({expr})\n"
    request, _ = plan(_finding("TL205", 2, 5, 2, len(source.splitlines()[1]) + 1), source)
    assert request is not None and request.variants == ()


def test_lint_findings_carry_no_code_and_survive_deep_expressions(tmp_path, run_cli):
    """Issue 8: the lint path no longer extracts snippets (no copy.deepcopy of user
    expressions); probe_params hold plain facts only."""
    expr = " + ".join(["i"] * 2500)
    write(tmp_path, "deep.py", f"import torch\ni = 1\nt = torch.FloatTensor({expr})\nu = torch.FloatTensor(3)\n")
    code, out, err = run_cli("check", "deep.py", "--select", "TL205", "--output-format", "json", "--no-cache")
    assert code == 1, err
    found = json.loads(out)
    assert [f["location"]["row"] for f in found] == [3, 4]
    assert all(f.get("verify") is None for f in found)
    from torchlint.checker import check_source
    from torchlint import catalog

    findings = check_source("deep.py", (tmp_path / "deep.py").read_bytes(), list(catalog.static_rules()))
    assert findings
    for f in findings:
        assert all(type(v) in (str, int, float, bool) for v in f.probe_params.values()), f.probe_params
        assert "snippet" not in f.probe_params


def test_verdict_cache_is_strict_and_keyed_by_everything(tmp_path):
    from torchlint.verify.plan import ProbeRequest

    cache = runner.VerdictCache(tmp_path)
    request = ProbeRequest("TL205", (("constructor", "torch.Tensor"),))
    f = ("m.py", "digest")
    key = cache.key(request, "cpu", "2.13.0", "hash", (60.0, 2**31), *f)
    assert key != cache.key(request, "cpu", "2.13.0", "other-probe-code", (60.0, 2**31), *f)
    assert key != cache.key(ProbeRequest("TL205", (("constructor", "torch.FloatTensor"),)), "cpu", "2.13.0", "hash",
                            (60.0, 2**31), *f)
    assert key != cache.key(ProbeRequest("TL205", (), ("t = 1",)), "cpu", "2.13.0", "hash", (60.0, 2**31), *f)
    # Per file: another file's worker never answers this request (issue 16 point 9).
    assert key != cache.key(request, "cpu", "2.13.0", "hash", (60.0, 2**31), "other.py", "digest")
    assert key != cache.key(request, "cpu", "2.13.0", "hash", (60.0, 2**31), "m.py", "other-text")
    at = _finding("TL205", 2, 5, 2, 25, {"constructor": "torch.Tensor"})
    located = cache.located_key(at, "digest", "cpu", "2.13.0", "hash", (60.0, 2**31))
    assert located != cache.located_key(at, "other-file-text", "cpu", "2.13.0", "hash", (60.0, 2**31))
    assert located != cache.located_key(at, "digest", "cpu", "2.13.0", "other-probe-code", (60.0, 2**31))
    assert located != cache.located_key(_finding("TL205", 3, 5, 3, 25, {"constructor": "torch.Tensor"}), "digest",
                                        "cpu", "2.13.0", "hash", (60.0, 2**31))
    cache.put(key, Verdict("error", "timed out"))  # errors are cached too
    assert cache.get(key) == Verdict("error", "timed out")
    entry = tmp_path / "verify" / f"{key}.json"
    for bad in ({"key": key, "verdict": "not-reproduced", "evidence": ["x"]},
                {"key": key, "verdict": "fine", "evidence": "x"},
                {"key": "other", "verdict": "confirmed", "evidence": "x"},
                {"key": key, "verdict": "confirmed", "evidence": "x", "extra": 1},
                {"key": key, "verdict": "confirmed", "evidence": "x" * 5000}):
        entry.write_text(json.dumps(bad))
        assert cache.get(key) is None, bad
    entry.write_text("[" * 100000)
    assert cache.get(key) is None
    entry.unlink()
    entry.symlink_to("/dev/zero")
    assert cache.get(key) is None


def test_committed_or_outside_verdict_cache_is_refused(tmp_path, run_cli):
    import shutil
    import subprocess

    if shutil.which("git") is None:
        pytest.skip("needs git")
    write(tmp_path, "train.py", "import torch\nt = torch.FloatTensor(3)\n")
    cache = tmp_path / ".torchlint_cache" / "verify"
    cache.mkdir(parents=True)
    (cache / "planted.json").write_text("{}")
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@t")
    for cmd in (["git", "init", "-q"], ["git", "add", "-f", "."], ["git", "commit", "-qm", "x"]):
        subprocess.run(cmd, cwd=tmp_path, env=env, check=True)
    code, out, err = run_cli("check", "train.py", "--verify", "--device", "cpu", "--output-format", "json")
    assert "is tracked by git" in err
    assert json.loads(out)[0]["verify"]["verdict"] == "confirmed"

    other = tmp_path / "sub"
    other.mkdir()
    write(other, "pyproject.toml", '[tool.torchlint]\ncache-dir = "../../elsewhere"\n')
    write(other, "train.py", "import torch\nt = torch.FloatTensor(3)\n")
    code, out, err = run_cli("check", "sub/train.py", "--verify", "--device", "cpu", "--config",
                             str(other / "pyproject.toml"))
    assert "lies outside the project" in err


def test_a_slice_that_never_reaches_the_flagged_line_leaves_time_for_the_probe():
    source = "import torch\nn = 0\nwhile n >= 0:\n    n += 1\nt = torch.tensor([1, 2, n], requires_grad=True)\n"
    finding = _finding_at("TL106", source, "torch.tensor([1, 2, n], requires_grad=True)", "slow.py")
    runner.verify_findings([finding], device="cpu", timeout=9, sources=lambda p: source)
    run = finding.verify["runs"][0]
    assert run["verdict"] == "demonstrated" and "ran past 3s" in run["evidence"], run


def test_time_budget_skips_what_is_left(tmp_path):
    source = "import torch\nt = torch.FloatTensor(3)\n"
    finding = _finding("TL205", 2, 5, 2, 25)
    runner.verify_findings([finding], device="cpu", timeout=60, sources=lambda p: source, budget=0.5)
    assert finding.verify["verdict"] == "skipped" and "time budget" in finding.verify["runs"][0]["evidence"]


def test_verify_options_are_validated(tmp_path, run_cli):
    write(tmp_path, "train.py", "import torch\nt = torch.FloatTensor(3)\n")
    for bad in (["--verify-timeout", "nan"], ["--verify-timeout", "inf"], ["--verify-budget", "inf"],
                ["--verify-memory", "10"]):
        code, _, err = run_cli("check", "train.py", "--verify", *bad)
        assert code == 2, (bad, err)
    write(tmp_path, "pyproject.toml", '[tool.torchlint]\nverify-memory = "lots"\n')
    code, _, err = run_cli("check", "train.py", "--verify")
    assert code == 2 and "verify-memory" in err


SOURCE = textwrap.dedent("""\
    import torch
    import torch.nn.functional as F

    model = torch.nn.Linear(4, 3)
    x = torch.randn(2, 4)
    y = torch.tensor([0, 2])
    with torch.no_grad():
        loss = F.cross_entropy(model(x), y)
        loss.backward()
    a = torch.tensor([1, 2, 3], requires_grad=True)
    b = torch.tensor([4, 5], requires_grad=True)
    c = torch.tensor([1, 2, 3], requires_grad=True)
    m = torch.zeros(3).to(device)
    state = torch.load("ckpt.pt")
    p = F.softmax(torch.randn(2, 3))
""")


def test_cli_verify_json_sarif_statistics(tmp_path, run_cli):
    import jsonschema

    write(tmp_path, "train.py", SOURCE)
    code, out, err = run_cli("check", "train.py", "--verify", "--device", "cpu", "--output-format", "json")
    assert code == 1, err
    findings = {(f["code"], f["location"]["row"]): f for f in json.loads(out)}
    tl101 = findings[("TL101", 9)]["verify"]
    assert tl101["verdict"] == "confirmed"
    assert tl101["runs"][0]["device"] == "cpu" and tl101["runs"][0]["torch"].startswith("2.")
    assert "does not require grad" in tl101["runs"][0]["evidence"]
    assert findings[("TL106", 10)]["verify"]["verdict"] == "confirmed"
    assert findings[("TL801", 13)]["verify"]["verdict"] in ("skipped", "demonstrated")  # a GPU or none
    assert findings[("TL601", 14)]["verify"]["verdict"] == "not-applicable"
    assert findings[("TL403", 15)]["verify"]["verdict"] == "not-reproduced"  # 2-D input: last dim

    code, out, _ = run_cli("check", "train.py", "--verify", "--device", "cpu", "--output-format", "sarif")
    doc = json.loads(out)
    jsonschema.validate(doc, json.loads(SCHEMA_PATH.read_text()))
    props = [r["properties"]["verify"] for r in doc["runs"][0]["results"]]
    assert all(p["runs"] for p in props)

    code, out, _ = run_cli("check", "train.py", "--verify", "--device", "cpu", "--statistics")
    verdict_line = next(line for line in out.splitlines() if line.startswith("verify: "))
    assert "confirmed 4" in verdict_line and "not-applicable 1" in verdict_line and "not-reproduced" in verdict_line

    code, out, _ = run_cli("check", "train.py", "--verify", "--device", "cpu", "--verified-only",
                           "--output-format", "json")
    kept = json.loads(out)
    assert kept and all(f["verify"]["verdict"] == "confirmed" for f in kept)
    assert {f["code"] for f in kept} == {"TL101", "TL106"}

    code, out, _ = run_cli("check", "train.py", "--verify", "--device", "cpu", "--select", "TL106",
                           "--output-format", "github")
    assert "[verify: confirmed on torch 2." in out

    code, out, _ = run_cli("check", "train.py", "--verify", "--device", "cpu", "--select", "TL101")
    assert "verify: confirmed on torch 2." in out and "(cpu) [your code: train.py:" in out
    assert "]: the call raised RuntimeError: element 0" in out


def test_evidence_is_escaped_in_text_output():
    from torchlint.output.text import verify_line

    finding = _finding("TL106", 1, 1, 1, 2)
    finding.verify = Verification((Verdict("error", "ValueError: '\x1b]52;c;aGk=\x07\x1b[2J'", torch="2"),))
    line = verify_line(finding)
    assert "\x1b" not in line and "\x07" not in line and "\\x1b" in line


def test_identical_requests_run_once_and_verdicts_are_cached(tmp_path, monkeypatch, run_cli):
    write(tmp_path, "train.py", "import torch\nimport math\n" + "t = torch.FloatTensor(3)\n" * 3)
    calls = []
    original = ProbeWorker.run
    monkeypatch.setattr(ProbeWorker, "run", lambda self, req, timeout=None: calls.append(req) or original(
        self, req, timeout))
    run_cli("check", "train.py", "--verify", "--device", "cpu", "--select", "TL205")
    # Three findings whose slices are the same code: it runs once.
    assert len(calls) == 1
    calls.clear()

    def no_start(self):
        raise AssertionError("the worker should not start: every verdict is cached")
    monkeypatch.setattr(ProbeWorker, "start", no_start)
    code, out, _ = run_cli("check", "train.py", "--verify", "--device", "cpu", "--select", "TL205",
                           "--output-format", "json")
    assert calls == [] and all(f["verify"]["verdict"] == "confirmed" for f in json.loads(out))


CASES = Path(__file__).parent / "verify_cases"

# Slice pairs for rules whose real findings on harmless code are rare: the same kind of
# flagged node in code where the hazard cannot happen. The verify path is the real one;
# only the finding's location is given by hand.
_H = "import torch\nimport torch.nn as nn\n"
SLICE_PAIRS: dict[str, tuple[tuple[str, str], tuple[str, str], str]] = {
    "TL103": ((_H + "m = nn.Linear(2, 1)\nfor i in range(2):\n    m(torch.ones(1, 2)).sum().backward()\n",
               "m(torch.ones(1, 2)).sum().backward()"),
              (_H + "m = nn.Linear(2, 1)\nfor i in range(2):\n    m.zero_grad()\n    m(torch.ones(1, 2)).sum().backward()\n",
               "m(torch.ones(1, 2)).sum().backward()"), "not-reproduced"),
    "TL105": ((_H + "w = torch.randn(3, requires_grad=True)\nw.sub_(0.1)\n", "w.sub_(0.1)"),
              (_H + "w = torch.randn(3)\nw.sub_(0.1)\n", "w.sub_(0.1)"), "not-reproduced"),
    "TL106": ((_H + "t = torch.tensor([1, 2], requires_grad=True)\n", "torch.tensor([1, 2], requires_grad=True)"),
              (_H + "t = torch.tensor([1., 2.], requires_grad=True)\n", "torch.tensor([1., 2.], requires_grad=True)"),
              "not-reproduced"),
    "TL107": ((_H + "m = nn.Linear(2, 1)\nt = 0\nfor i in range(2):\n    l = m(torch.ones(1, 2)).sum()\n    t += l\n",
               "t += l"),
              (_H + "m = nn.Linear(2, 1)\nt = 0\nfor i in range(2):\n    l = m(torch.ones(1, 2)).sum().item()\n"
               "    t += l\n", "t += l"), "not-reproduced"),
    "TL108": ((_H + "with torch.no_grad:\n    pass\n", "torch.no_grad"),
              (_H + "ctx = torch.no_grad()\nwith ctx:\n    pass\n", "ctx"), "not-reproduced"),
    "TL206": ((_H + "class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
               "        self.mask = torch.ones(2)\n", "self.mask"),
              (_H + "class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
               "        self.mask = nn.Parameter(torch.ones(2))\n", "self.mask"), "not-reproduced"),
    "TL304": ((_H + "from torch.utils.data import DataLoader, RandomSampler\nd = [1, 2]\n"
               "l = DataLoader(d, shuffle=True, sampler=RandomSampler(d))\n",
               "DataLoader(d, shuffle=True, sampler=RandomSampler(d))"),
              (_H + "from torch.utils.data import DataLoader, RandomSampler\nd = [1, 2]\n"
               "l = DataLoader(d, shuffle=False, sampler=RandomSampler(d))\n",
               "DataLoader(d, shuffle=False, sampler=RandomSampler(d))"), "not-reproduced"),
    "TL301": ((_H + "import numpy as np\nclass D(torch.utils.data.Dataset):\n    def __init__(self):\n"
               "        self.rng = np.random.default_rng(0)\n    def __len__(self):\n        return 4\n"
               "    def __getitem__(self, i):\n        return self.rng.random()\n"
               "l = torch.utils.data.DataLoader(D(), num_workers=2)\n", "torch.utils.data.DataLoader(D(), num_workers=2)"),
              (_H + "import numpy as np\nclass D(torch.utils.data.Dataset):\n    def __len__(self):\n        return 4\n"
               "    def __getitem__(self, i):\n        return np.random.random()\n"
               "l = torch.utils.data.DataLoader(D(), num_workers=2)\n", "torch.utils.data.DataLoader(D(), num_workers=2)"),
              "not-reproduced"),
}


def _finding_at(code: str, source: str, needle: str, path: str):
    lines = source.splitlines()
    row = next(i for i, line in enumerate(lines, 1) if needle in line)
    col = lines[row - 1].index(needle) + 1
    return _finding(code, row, col, row, col + len(needle), path=path)


def test_slice_pairs_come_out_both_ways():
    sources: dict[str, str] = {}
    findings = []
    for code, ((yes_src, yes_at), (no_src, no_at), _) in sorted(SLICE_PAIRS.items()):
        for kind, src, at in (("yes", yes_src, yes_at), ("no", no_src, no_at)):
            path = f"{code}_{kind}.py"
            sources[path] = src
            findings.append(_finding_at(code, src, at, path))
    runner.verify_findings(findings, device="cpu", timeout=120, sources=sources.get)
    got = {f.path: f.verify["verdict"] for f in findings}
    for code, (_, _, other) in SLICE_PAIRS.items():
        assert got[f"{code}_yes.py"] == "confirmed", (code, [f.verify for f in findings if f.path == f"{code}_yes.py"])
        assert got[f"{code}_no.py"] == other, (code, [f.verify for f in findings if f.path == f"{code}_no.py"])


# Rules whose pair (one confirmed, one not) is in tests/verify_cases: real findings.
CASE_PAIRS = {
    "TL101": ("tl101_backward_in_no_grad.py", "tl101_enable_grad_inside.py"),
    "TL102": ("tl102_write_after_forward.py", "tl102_write_before_forward.py"),
    "TL104": ("tl104_zero_grad_before_step.py", "tl104_other_optimizer.py"),
    "TL109": ("tl109_typo_attribute.py", "tl109_already_requires_grad.py"),
    "TL201": ("tl201_class_index_float.py", "tl201_soft_targets.py"),
    "TL202": ("tl202_discarded_float.py", "tl202_already_float.py"),
    "TL203": (None, "tl203_float_then_cpu.py"),  # the confirmed side needs a CUDA device
    "TL204": ("tl204_rand_float64.py", "tl204_zeros_float32.py"),
    "TL205": ("tl205_size_constructor.py", "tl205_values_constructor.py"),
    # Softmax of equal logits is uniform, and so is the logits' own softmax: the same loss.
    "TL401": ("tl401_softmax_into_ce.py", "tl401_softmax_of_equal_logits.py"),
    "TL403": ("tl403_3d_input.py", "tl403_2d_input.py"),
    "TL701": ("tl701_list_of_layers.py", "tl701_rewrapped_list.py"),
    "TL702": ("tl702_missing_super.py", "tl702_plain_attributes.py"),
    "TL703": ("tl703_forward_skips_hook.py", "tl703_forward_without_hooks.py"),
    # One level of same-file helpers is followed statically (tl704_train_restored_by_helper.py is
    # no longer reported); two levels deep is left to --verify.
    "TL704": ("tl704_eval_never_undone.py", "tl704_train_restored_two_calls_deep.py"),
}


@pytest.fixture(scope="module")
def case_verdicts() -> dict[str, list[tuple[str, str]]]:
    from click.testing import CliRunner

    from torchlint.cli import main

    # TL203 is off by default; its cases still show what --verify makes of it.
    result = CliRunner().invoke(main, ["check", str(CASES), "--isolated", "--no-cache", "--verify", "--device", "cpu",
                                       "--extend-select", "TL203", "--output-format", "json"], catch_exceptions=False)
    verdicts: dict[str, list[tuple[str, str]]] = {}
    for f in json.loads(result.stdout):
        verdicts.setdefault(Path(f["filename"]).name, []).append((f["code"], f["verify"]["verdict"]))
    return verdicts


@pytest.mark.parametrize("code", sorted(CASE_PAIRS))
def test_case_pairs_come_out_both_ways(case_verdicts, code):
    yes, no = CASE_PAIRS[code]
    if yes is not None:
        assert (code, "confirmed") in case_verdicts[yes], case_verdicts.get(yes)
    verdicts = [v for c, v in case_verdicts[no] if c == code]
    assert verdicts and all(v in ("not-reproduced", "not-applicable") for v in verdicts), case_verdicts.get(no)


def test_held_out_style_cases_are_labelled_by_running_them():
    import re
    import subprocess

    out = subprocess.run([sys.executable, str(CASES / "_label.py")], capture_output=True, text=True, check=True)
    labels = json.loads(out.stdout)
    for name, label in labels.items():
        declared = re.search(r"# label: (\w+)", (CASES / name).read_text()).group(1)
        assert declared == label, name


def test_held_out_style_cases_harmless_never_confirmed_harmful_mostly_confirmed(case_verdicts):
    import re

    harmful = confirmed = 0
    for path in sorted(CASES.glob("tl*.py")):
        label = re.search(r"# label: (\w+)", path.read_text()).group(1)
        got = [v for _, v in case_verdicts.get(path.name, [])]
        if label == "harmless":
            assert "confirmed" not in got, (path.name, got)
        else:
            harmful += 1
            confirmed += "confirmed" in got
    assert harmful and confirmed / harmful >= 0.8, (confirmed, harmful)


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
    # Its code (`.to(device)`, a parameter) cannot run alone: the probe demonstrates on CUDA.
    assert {r["device"]: r["verdict"] for r in tl801["verify"]["runs"]}["cuda"] == "demonstrated"


def test_without_findings_verify_still_checks_torch(tmp_path, run_cli):
    write(tmp_path, "ok.py", "import torch\n")
    assert run_cli("check", "ok.py", "--verify")[0] == 0
    assert os.path.exists(tmp_path / "ok.py")


def test_a_skip_the_worker_decided_is_cached_so_a_warm_run_starts_no_worker(tmp_path, monkeypatch):
    """TL801 on a machine without a GPU is `skipped: needs CUDA`, a fact about this torch and
    device: the warm run must not start a worker (2 CPU-s of torch import) to hear it again.
    A skip of the run itself (the budget ran out) is still not cached."""
    from torchlint.verify import runner as runner_module

    text = "import torch\nm = torch.zeros(3).to('cuda')\n"
    first = _lint("TL801", text, "x.py")
    runner_module.verify_findings([first], device="cpu", timeout=60, sources={"x.py": text}.get, cache_dir=tmp_path)
    assert first.verify["verdict"] == "skipped" and "needs CUDA" in first.verify["runs"][0]["evidence"]

    def no_worker(self):
        raise AssertionError("a worker was started on a warm cache")

    monkeypatch.setattr(runner_module.ProbeWorker, "start", no_worker)
    again = _lint("TL801", text, "x.py")
    runner_module.verify_findings([again], device="cpu", timeout=60, sources={"x.py": text}.get, cache_dir=tmp_path)
    assert again.verify == first.verify
    late = _lint("TL801", text + "# another text\n", "x.py")
    runner_module.verify_findings([late], device="cpu", timeout=60, budget=0.5,
                                  sources={"x.py": text + "# another text\n"}.get, cache_dir=tmp_path)
    assert "budget" in late.verify["runs"][0]["evidence"]
    assert not any("budget" in p.read_text() for p in (tmp_path / "verify").iterdir())
