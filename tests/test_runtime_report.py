"""`torchlint run --report report.html`: the series the monitors record (in-process, against
values torch computes), the page built from events (no torch: escaping, no script, points per
line, the first non-finite value), and one real run whose page headless Chromium renders: its
DOM holds the charts with a point per step, and its screenshot shows the loss curve."""

from __future__ import annotations

import math
import os
import shutil
import struct
import subprocess
import sys
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest

from torchlint.diagnostics import Finding
from torchlint.records import RuntimeResult
from torchlint.runtime.html_report import render_html
from torchlint.runtime.judging import Observation
from torchlint.runtime.recorder import KEEP, sampled
from torchlint.runtime.svg_chart import PALETTE

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


class Elements(HTMLParser):
    """Every start tag with its attributes, and the page's text."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def all(self, tag: str, **attrs: str) -> list[dict]:
        return [a for t, a in self.tags if t == tag and all(a.get(k) == v for k, v in attrs.items())]


def parsed(page: str) -> Elements:
    elements = Elements()
    elements.feed(page)
    return elements


def test_steps_are_sampled_densely_first_then_about_keep_per_doubling():
    assert all(sampled(n) for n in range(1, 2 * KEEP))
    assert [n for n in range(2 * KEEP, 2 * KEEP + 8) if sampled(n)] == [2 * KEEP, 2 * KEEP + 2, 2 * KEEP + 4,
                                                                      2 * KEEP + 6]
    assert sum(sampled(n) for n in range(4 * KEEP, 8 * KEEP)) == KEEP // 2 * 2  # every 4th of 4*KEEP steps
    assert sum(sampled(n) for n in range(1, 128 * KEEP + 1)) < 9 * KEEP


def series(step: int, loss: float, norms: list, rank: int = 0) -> dict:
    return {"kind": "series", "pid": 10 + rank, "rank": rank, "step": step, "site": ["/w/train.py", 30, "main", 1, 40],
            "optimizer": "SGD", "loss": {"/w/train.py:28": loss}, "lr": [0.1, 0.01],
            "grad_norm": norms, "groups": ["group 0: fc.weight and 1 more", "group 1: head.weight"]}


EVENTS = [
    {"kind": "process", "pid": 10},
    *(series(n, 2.0 / n, [1.0 / n, None]) for n in range(1, 6)),
    series(6, math.nan, [math.inf, None]),
    {"kind": "nonfinite", "pid": 10, "step": 5, "site": ["/w/train.py", 28, "main", 1, 40], "where": "loss",
     "value": "nan", "masked_inf": None},
    {"kind": "worker_rng", "pid": 11, "site": ["/w/train.py", 20, "main", 1, 40], "loader": "10:1", "worker_id": 0,
     "num_workers": 2, "dataset": "Noisy", "streams": {"self.rng (numpy.random.Generator)": [0.5, 0.25, 0.125, 0.0625]},
     "global": {"torch": [0.1, 0.2, 0.3, 0.4]}},
    {"kind": "worker_rng", "pid": 12, "site": ["/w/train.py", 20, "main", 1, 40], "loader": "10:1", "worker_id": 1,
     "num_workers": 2, "dataset": "Noisy", "streams": {"self.rng (numpy.random.Generator)": [0.5, 0.25, 0.125, 0.0625]},
     "global": {"torch": [0.9, 0.8, 0.7, 0.6]}},
    {"kind": "worker_rng_drawn", "pid": 11, "loader": "10:1", "worker_id": 0,
     "drawn": ["streams:self.rng (numpy.random.Generator)"]},
    {"kind": "compile", "pid": 10, "step": 0, "site": ["/w/train.py", 12, "main", 1, 40], "fullgraph": True,
     "target": "Net", "backend": None},
]


def test_the_page_is_built_from_the_events_without_script_or_network():
    hostile = Finding(code="TL121", message="NaN in `<script>alert(1)</script>`", path="train.py", row=28, col=5,
                      end_row=28, end_col=9, runtime=RuntimeResult("confirmed", "the loss was nan at step 5", 1))
    page = render_html([hostile], Observation(list(EVENTS)), Path("/w"), "python train.py", "torchlint run: done")
    dom = parsed(page)
    assert not dom.all("script") and not dom.all("link") and not dom.all("img") and not dom.all("iframe")
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)" in page
    csp = dom.all("meta", **{"http-equiv": "Content-Security-Policy"})
    assert csp and csp[0]["content"].startswith("default-src 'none'")
    assert [r["data-code"] for r in dom.all("tr", **{"class": "finding"})] == ["TL121"]
    loss = dom.all("polyline", **{"data-chart": "loss-chart", "data-label": "loss at train.py:28"})
    # Six steps: five finite losses drawn, the NaN a cross on the edge (and not a point of the line).
    assert loss and loss[0]["data-points"] == "5" and len(loss[0]["points"].split()) == 5
    assert loss[0]["stroke"] == PALETTE[0]
    norms = dom.all("polyline", **{"data-chart": "grad-norm-chart"})
    # Group 1 had no gradient: no line; group 0's inf norm is a cross, not a point.
    assert [(n["data-label"], n["data-points"]) for n in norms] == [("SGD at train.py:30, group 0: fc.weight and 1 more",
                                                                     "5")]
    rates = dom.all("polyline", **{"data-chart": "lr-chart"})
    assert [r["data-label"] for r in rates] == ["SGD at train.py:30, group 0: fc.weight and 1 more",
                                                "SGD at train.py:30, group 1: head.weight"]
    assert [r["data-points"] for r in rates] == ["6", "6"]
    assert len(dom.all("path", **{"class": "nonfinite"})) == 2  # the NaN loss and the inf norm
    assert dom.all("line", **{"class": "marker"})  # the first non-finite value, on each chart
    text = " ".join(dom.text)
    assert "First non-finite value" in text and "nan" in text
    assert "torch.compile(`Net`, fullgraph=True) at train.py:12: the compiled region ran without the monitors" in text
    # The workers' identical dataset stream is highlighted, their distinct torch streams are not.
    same = [a for t, a in dom.tags if t == "td" and a.get("class") == "same"]
    assert len(same) == 2
    assert "(drawn in the first batch)" in text


def test_a_run_that_recorded_nothing_says_so():
    page = render_html([], Observation([{"kind": "process", "pid": 1}]), Path("/w"), "python x.py", "")
    assert "No optimizer step ran under the monitors" in page and "<polyline" not in page
    assert "No findings." in page


def test_the_recorder_writes_the_values_torch_computes():
    torch = pytest.importorskip("torch")
    from torchlint.runtime.monitor import ListSink, Monitor

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 2))
    opt = torch.optim.SGD([{"params": model[0].parameters()}, {"params": model[1].parameters(), "lr": 0.5}], lr=0.1)
    monitor = Monitor(ListSink())
    monitor.install()
    try:
        seen = []
        for _ in range(3):
            opt.zero_grad()
            loss = model(torch.randn(5, 3)).pow(2).mean()
            loss.backward()
            norms = [torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in g["params"]])).item()
                     for g in opt.param_groups]
            opt.step()
            seen.append((loss.item(), norms))
    finally:
        monitor.uninstall()
    events = [e for e in monitor.sink.events if e["kind"] == "series"]
    assert [e["step"] for e in events] == [1, 2, 3]
    for event, (value, norms) in zip(events, seen):
        assert list(event["loss"].values()) == [value]  # the loss exactly, as float(loss) reads it
        assert event["grad_norm"] == pytest.approx(norms, rel=1e-6)
        assert event["lr"] == [0.1, 0.5]
        assert event["groups"] == ["group 0: 0.weight and 1 more", "group 1: 1.weight and 1 more"]


PROGRAM = '''
import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class Noisy(Dataset):
    def __init__(self):
        self.rng = np.random.default_rng(0)

    def __len__(self):
        return 24

    def __getitem__(self, i):
        return torch.full((4,), float(self.rng.normal())), i % 3


def main():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    opt = torch.optim.SGD([{"params": model[0].parameters()}, {"params": model[2].parameters(), "lr": 0.05}], lr=0.1)
    for x, y in DataLoader(Noisy(), batch_size=4, num_workers=2):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        print(repr(loss.item()))


if __name__ == "__main__":
    main()
'''


def png_pixels(path: Path):  # -> numpy array (height, width, channels)
    """Decode an 8-bit, non-interlaced RGB/RGBA PNG (what Chromium writes) with zlib and numpy."""
    np = pytest.importorskip("numpy")
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks, header = 8, [], None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            chunks.append(body)
    assert header is not None
    width, height, depth, colour_type, _, _, interlace = header
    assert depth == 8 and colour_type in (2, 6) and interlace == 0, header
    bpp = 3 if colour_type == 2 else 4
    raw = np.frombuffer(zlib.decompress(b"".join(chunks)), dtype=np.uint8).reshape(height, 1 + width * bpp)
    out = np.zeros((height, width * bpp), dtype=np.uint8)
    prev = np.zeros(width * bpp, dtype=np.int32)
    for y in range(height):
        kind, line = raw[y, 0], raw[y, 1:].astype(np.int32)
        if kind == 0:
            row = line
        elif kind == 1:  # Sub: a running sum per channel
            row = np.cumsum(line.reshape(width, bpp), axis=0).reshape(-1) % 256
        elif kind == 2:  # Up
            row = (line + prev) % 256
        else:  # Average and Paeth depend on the pixel to the left: one pixel at a time
            row = line.copy()
            for x in range(width * bpp):
                a = row[x - bpp] if x >= bpp else 0
                b, c = prev[x], (prev[x - bpp] if x >= bpp else 0)
                if kind == 3:
                    row[x] = (line[x] + (a + b) // 2) % 256
                else:
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    row[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) % 256
        out[y] = row
        prev = row.astype(np.int32)
    return out.reshape(height, width, bpp)[:, :, :3]


def chromium(*args: str, profile: Path) -> subprocess.CompletedProcess:
    assert CHROMIUM is not None
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                           "--disable-background-networking", "--disable-component-update", "--disable-sync",
                           f"--user-data-dir={profile}", *args], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)


@pytest.mark.torch
@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (`apt-get install chromium`; .ci/run does it)")
def test_the_report_of_a_real_run_renders_in_headless_chromium(tmp_path):
    pytest.importorskip("torch")
    np = pytest.importorskip("numpy")
    (tmp_path / "train.py").write_text(PROGRAM, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    report = tmp_path / "report.html"
    done = subprocess.run([sys.executable, "-m", "torchlint", "run", "--full", "--report", str(report), "-o",
                           str(tmp_path / "findings.txt"), "--", sys.executable, "train.py"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr  # TL301 confirmed
    assert len(done.stdout.splitlines()) == 6  # the program's own output: a loss per step
    dom = parsed(report.read_text(encoding="utf-8"))
    assert [r["data-code"] for r in dom.all("tr", **{"class": "finding"})].count("TL301") == 1

    # The DOM as Chromium built it: the charts exist with a point per optimizer step.
    rendered = chromium("--dump-dom", report.as_uri(), profile=tmp_path / "profile")
    assert rendered.returncode == 0, rendered.stderr[-2000:]
    live = parsed(rendered.stdout)
    charts = {a["id"] for a in live.all("svg") if a.get("class") == "chart"}
    assert {"loss-chart", "grad-norm-chart", "lr-chart"} <= charts, charts
    lines = live.all("polyline", **{"class": "line"})
    loss = [a for a in lines if a["data-chart"] == "loss-chart"]
    assert [(a["data-label"], a["data-points"]) for a in loss] == [("loss at train.py:26", "6")]
    assert len(loss[0]["points"].split()) == 6
    for chart in ("grad-norm-chart", "lr-chart"):
        assert [(a["data-label"], a["data-points"]) for a in lines if a["data-chart"] == chart] == [
            ("SGD at train.py:27, group 0: 0.weight and 1 more", "6"), ("SGD at train.py:27, group 1: 2.weight and 1 more", "6")]
    assert len([a for t, a in live.tags if t == "td" and a.get("class") == "same"]) == 2  # the workers' self.rng

    shot = tmp_path / "shot.png"
    taken = chromium(f"--screenshot={shot}", "--window-size=1200,2000", report.as_uri(), profile=tmp_path / "profile")
    assert taken.returncode == 0 and shot.exists(), taken.stderr[-2000:]
    pixels = png_pixels(shot).astype(np.int32)
    assert pixels.shape[:2] == (2000, 1200)
    blue = np.array([int(PALETTE[0][i:i + 2], 16) for i in (1, 3, 5)])
    near = (np.abs(pixels - blue).max(axis=2) <= 12).sum()
    assert near > 600, near  # the loss curve (its legend swatch is 144 pixels)
    assert (pixels.min(axis=2) < 200).mean() > 0.02  # the page is not blank


def test_the_page_is_written_as_o_writes_never_through_a_symlink(tmp_path):
    """A program that steps no optimizer (no torch needed) still gets its page; a report path that
    is a symlink the tree planted is refused, as `-o` refuses it, and nothing is written."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    project = tmp_path / "project"
    project.mkdir()
    (project / "planted.html").symlink_to(tmp_path / "outside.html")

    def run(report: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "torchlint", "run", "--report", report, "--", sys.executable, "-c",
                               "print(1)"], cwd=project, env=env, capture_output=True, text=True, timeout=120)

    refused = run("planted.html")
    assert refused.returncode == 2 and refused.stdout == "1\n"
    assert "error: --report planted.html: is a symbolic link; not overwritten" in refused.stderr
    assert not (tmp_path / "outside.html").exists()
    written = run("page.html")
    assert written.returncode == 0 and written.stdout == "1\n", written.stderr
    page = (project / "page.html").read_text(encoding="utf-8")
    assert "No optimizer step ran under the monitors" in page and "exited with code 0" in page
