"""The language server's cost per publication, in-process (no transport): lint + publish and
publish alone for documents with 1,000 to 16,000 findings, then a 2 MB document. Publishing
must grow linearly; before issue 16 it re-split the document for every position (8,000
findings: 18 s; 2 MB: over 15 minutes).

    python benchmarks/language_server_cost.py
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pygls.workspace import Workspace

from torchlint.language_server import TorchlintServer

LINE = "x = torch.FloatTensor(3)  # é\n"  # one finding per line, one non-ASCII character


class Quiet(TorchlintServer):
    def text_document_publish_diagnostics(self, params: types.PublishDiagnosticsParams) -> None:  # type: ignore[override]
        self.count = len(params.diagnostics)


def measure(server: Quiet, root: Path, name: str, text: str) -> tuple[float, float, int]:
    uri = (root / name).as_uri()
    server.workspace.put_text_document(types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text))
    start = time.process_time()
    server.lint(uri)
    total = time.process_time() - start
    findings = server.findings[uri]
    start = time.process_time()
    server.publish(uri, findings)
    return total, time.process_time() - start, server.count


def main() -> None:
    root = Path(tempfile.mkdtemp())
    server = Quiet()
    server.protocol._workspace = Workspace(root.as_uri())
    print(f"{'findings':>9} {'bytes':>10} {'lint+publish s':>15} {'publish s':>10}")
    for n in (1000, 2000, 4000, 8000, 16000):
        text = "import torch\n" + LINE * n
        total, publish, count = measure(server, root, f"m{n}.py", text)
        print(f"{count:>9} {len(text.encode()):>10} {total:>15.3f} {publish:>10.3f}")
    text = "import torch\n" + LINE * (2_000_000 // len(LINE.encode()))
    total, publish, count = measure(server, root, "big.py", text)
    print(f"{count:>9} {len(text.encode()):>10} {total:>15.3f} {publish:>10.3f}  (2 MB)")


if __name__ == "__main__":
    main()
