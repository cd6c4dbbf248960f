"""`--verify`'s machinery: the worker protocol, timeouts, crashes, the memory watchdog, hostile
slices, missing torch, caching, and the output shapes. What --verify makes of each rule is in
the rule's fixtures (`tests/fixtures/<code>/verify/`, run by test_verify_rules.py). Needs torch
(CPU is enough)."""

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

def test_every_probed_rule_has_a_probe_and_others_say_why():
    from torchlint.verify import evidence_index  # the worker's copy of the rules' probes

    assert set(evidence_index.PROBES) == set(PROBED)


def _lint(code: str, source: str, path: str):
    from torchlint.checker import check_source
    from torchlint import catalog

    found = [f for f in check_source(path, source.encode(), [catalog.by_code()[code]]) if f.code == code]
    assert len(found) == 1, (code, path, found)
    return found[0]


def test_tl602_note_is_true_of_the_installed_torch():
    """The note says a default torch.load refuses a pickled module unless its class is allow-listed."""
    import io

    import torch

    buf = io.BytesIO()
    torch.save(torch.nn.Linear(2, 2), buf)  # noqa: TL602 - a pickled module is what the note is about
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
    for row in (4, 5, 6):  # refused before running: the fact probe answers instead, and its
        # facts (an argument that is not a literal) cannot tell sizes from values
        assert runs[row]["verdict"] == "skipped" and "not allowed to run" in runs[row]["evidence"], runs[row]
    # Not a literal: it runs, and the watchdog stops it at the limit.
    assert runs[7]["verdict"] == "error" and "--verify-memory limit of 768 MiB" in runs[7]["evidence"], runs[7]


@pytest.mark.parametrize("source, refused", [
    ("torch.manual_seed(123456789)\nw = torch.zeros(4, 5)\n", False),
    ("x = torch.ones(3 * 10**9)\n", True),
    ("y = 9**9**9 + 1\n", True),
    ("z = [0] * 10**7\n", True),
    ("import numpy as np\nnp.zeros((100000, 100000))\n", True),
])
def test_a_program_with_a_hostile_literal_anywhere_is_not_run(source, refused):
    """The file run as its program has no allow-list, but keeps the pre-filter's literal
    bounds: one hostile literal anywhere in the file keeps the whole program from starting."""
    import ast

    from torchlint.verify.program import literal_bounds
    from torchlint.verify.safety import Unsafe

    if refused:
        with pytest.raises(Unsafe):
            literal_bounds(ast.parse(source))
    else:
        literal_bounds(ast.parse(source))


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
    code, out, err = run_cli("check", "train.py", "--verify", "--device", "cpu", "--select", "TL205",
                             "--output-format", "json")
    assert "is tracked by git" in err
    assert json.loads(out)[0]["verify"]["verdict"] == "confirmed"

    other = tmp_path / "sub"
    other.mkdir()
    write(other, "pyproject.toml", '[tool.torchlint]\ncache-dir = "../../elsewhere"\n')
    write(other, "train.py", "import torch\nt = torch.FloatTensor(3)\n")
    code, out, err = run_cli("check", "sub/train.py", "--verify", "--device", "cpu", "--select", "TL205", "--config",
                             str(other / "pyproject.toml"))
    assert "lies outside the project" in err


def _finding_at(code: str, source: str, needle: str, path: str):
    lines = source.splitlines()
    row = next(i for i, line in enumerate(lines, 1) if needle in line)
    col = lines[row - 1].index(needle) + 1
    return _finding(code, row, col, row, col + len(needle), path=path)


def test_a_slice_that_never_reaches_the_flagged_line_leaves_time_for_the_probe():
    source = "import torch\nn = 0\nwhile n >= 0:\n    n += 1\nt = torch.tensor([1, 2, n], requires_grad=True)\n"
    finding = _finding_at("TL106", source, "torch.tensor([1, 2, n], requires_grad=True)", "slow.py")
    runner.verify_findings([finding], device="cpu", timeout=9, sources=lambda p: source)
    run = finding.verify["runs"][0]
    # TL106's probe builds its own example: what it shows is labelled, not claimed (verify/claims.py).
    assert run["verdict"] == "skipped" and "ran past 3s" in run["evidence"] and "(demonstrated)" in run["evidence"], run


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
# TL403, TL601 and TL801 are off by default; SOURCE exercises them.
SOURCE_RULES = ("--extend-select", "TL403,TL601,TL801")


def test_cli_verify_json_sarif_statistics(tmp_path, run_cli):
    import jsonschema

    write(tmp_path, "train.py", SOURCE)
    code, out, err = run_cli("check", "train.py", "--verify", "--device", "cpu", *SOURCE_RULES, "--output-format", "json")
    assert code == 1, err
    findings = {(f["code"], f["location"]["row"]): f for f in json.loads(out)}
    tl101 = findings[("TL101", 9)]["verify"]
    assert tl101["verdict"] == "confirmed"
    assert tl101["runs"][0]["device"] == "cpu" and tl101["runs"][0]["torch"].startswith("2.")
    assert "does not require grad" in tl101["runs"][0]["evidence"]
    assert findings[("TL106", 10)]["verify"]["verdict"] == "confirmed"
    assert findings[("TL801", 13)]["verify"]["verdict"] in ("skipped", "demonstrated")  # a GPU or none
    assert findings[("TL601", 14)]["verify"]["verdict"] == "skipped"  # torch 2.13 cannot show the < 2.6 default
    assert findings[("TL403", 15)]["verify"]["verdict"] == "not-reproduced"  # 2-D input: last dim

    code, out, _ = run_cli("check", "train.py", "--verify", "--device", "cpu", *SOURCE_RULES, "--output-format", "sarif")
    doc = json.loads(out)
    jsonschema.validate(doc, json.loads(SCHEMA_PATH.read_text()))
    props = [r["properties"]["verify"] for r in doc["runs"][0]["results"]]
    assert all(p["runs"] for p in props)

    code, out, _ = run_cli("check", "train.py", "--verify", "--device", "cpu", *SOURCE_RULES, "--statistics")
    verdict_line = next(line for line in out.splitlines() if line.startswith("verify: "))
    assert "confirmed 4" in verdict_line and "skipped" in verdict_line and "not-reproduced" in verdict_line
    assert "not-applicable" not in verdict_line

    code, out, _ = run_cli("check", "train.py", "--verify", "--device", "cpu", *SOURCE_RULES, "--verified-only",
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
    out = json.loads(run_cli("check", "train.py", "--verify", "--device", "auto", *SOURCE_RULES, "--output-format", "json")[1])
    for f in out:
        devices = {r["device"]: r["verdict"] for r in f["verify"]["runs"]}
        assert set(devices) == {"cpu", "cuda"}
    tl801 = next(f for f in out if f["code"] == "TL801")
    # Its code (`.to(device)`, a parameter) cannot run alone: the probe demonstrates on CUDA, and
    # TL801 is off by default, so the demonstration is labelled, not claimed (verify/claims.py).
    cuda = next(r for r in tl801["verify"]["runs"] if r["device"] == "cuda")
    assert cuda["verdict"] == "skipped" and "(demonstrated)" in cuda["evidence"], cuda


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
