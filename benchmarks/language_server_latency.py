"""Edit-to-diagnostics latency of `torchlint server` as an editor sees it (issue 23): a real
LSP client (pygls' LanguageClient) over stdio opens a 2,000-line training file, then makes
50 edits, one at a time, each after the last one's diagnostics arrived and a pause, and
times each `didChange` to its `publishDiagnostics`. Then a burst of rapid edits (typing),
which must be linted once, after the pause. Prints median and p95 against the target
(median <= 50 ms) and the server's start-to-`initialize` time.

    python benchmarks/language_server_latency.py
    python benchmarks/language_server_latency.py --edits 100 --lines 4000

Not a test: timings on shared machines are noisy.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

BLOCK = '''
def train_{i}(model, loader, opt):
    model.train()
    for x, y in loader:
        out = model(x)
        loss = F.cross_entropy(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return loss.item()

'''
HEADER = "import torch\nimport torch.nn.functional as F\n\n"
PAUSE = 0.4  # seconds between edits: longer than the server's typing debounce


def document(lines: int) -> str:
    blocks = max(1, lines // BLOCK.count("\n"))
    return HEADER + "".join(BLOCK.format(i=i) for i in range(blocks))


async def run(edits: int, lines: int) -> None:
    client = LanguageClient("torchlint-latency", "1")
    published: list[float] = []
    arrived = asyncio.Event()

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_diagnostics(params: types.PublishDiagnosticsParams) -> None:
        published.append(time.perf_counter())
        arrived.set()

    async def next_publication(count: int) -> float:
        while len(published) < count:
            arrived.clear()
            await asyncio.wait_for(arrived.wait(), 60)
        return published[count - 1]

    root = Path(tempfile.mkdtemp(prefix="torchlint-lsp-latency-"))
    uri = (root / "train.py").as_uri()
    text = document(lines)
    start = time.perf_counter()
    await client.start_io(sys.executable, "-m", "torchlint", "server", cwd=str(root))
    await asyncio.wait_for(client.initialize_async(types.InitializeParams(
        capabilities=types.ClientCapabilities(), root_uri=root.as_uri())), 60)
    initialized = time.perf_counter() - start
    client.initialized(types.InitializedParams())
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
    await next_publication(1)
    latencies = []
    for n in range(edits):
        await asyncio.sleep(PAUSE)
        text = text.replace("model.train()", "model.train()  # edited", 1) if n % 2 == 0 else \
            text.replace("model.train()  # edited", "model.train()", 1)
        sent = time.perf_counter()
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=n + 2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))
        latencies.append(await next_publication(n + 2) - sent)
    await asyncio.sleep(PAUSE)
    before = len(published)
    for k in range(10):  # typing: ten edits 20 ms apart
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=edits + 2 + k),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text + "#" * (k + 1))]))
        await asyncio.sleep(0.02)
    await asyncio.sleep(1.0)
    burst = len(published) - before
    await asyncio.wait_for(client.shutdown_async(None), 60)
    client.exit(None)
    await client.stop()
    ms = sorted(1000 * t for t in latencies)
    p95 = ms[min(len(ms) - 1, int(0.95 * len(ms)))]
    median = statistics.median(ms)
    print(f"python {sys.version.split()[0]}; a {text.count(chr(10))}-line document, {edits} edits")
    print(f"  server start to initialize: {1000 * initialized:.0f} ms")
    print(f"  edit to diagnostics: median {median:.1f} ms, p95 {p95:.1f} ms, max {ms[-1]:.1f} ms "
          f"({median / 50:.2f}x the 50 ms target)")
    print(f"  ten edits 20 ms apart: {burst} publication(s) (typing is linted once it pauses)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--edits", type=int, default=50)
    parser.add_argument("--lines", type=int, default=2000)
    args = parser.parse_args()
    asyncio.run(run(args.edits, args.lines))


if __name__ == "__main__":
    main()
