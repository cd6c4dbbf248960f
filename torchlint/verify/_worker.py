"""Probe worker: started by torchlint as `python -I _worker.py` in a temporary directory with
a scrubbed environment. Imports torch once, then answers one JSON request per stdin line
with one JSON line on stdout. Imports nothing from torchlint (it may not be importable
under -I); `probes` is found next to this file."""

import json
import os
import sys
import traceback


def main() -> None:
    out = sys.stdout
    sys.stdout = sys.stderr  # stray prints from probes must not corrupt the protocol
    import torch  # noqa: F401 - imported once for all probes

    import probes

    out.write(json.dumps({"torch": torch.__version__, "cuda": bool(torch.cuda.is_available())}) + "\n")
    out.flush()
    for line in sys.stdin:
        request = json.loads(line)
        code, device = request["code"], request["device"]
        try:
            if request.get("snippet"):
                verdict, evidence = probes.run_snippet(code, request["snippet"], device)
            else:
                verdict, evidence = probes.PROBES[code](request.get("params") or {}, device)
        except Exception as exc:  # noqa: BLE001 - a failing probe is an `error` verdict
            frame = traceback.extract_tb(exc.__traceback__)[-1]
            verdict = "error"
            evidence = f"probe failed: {type(exc).__name__}: {str(exc)[:200]} (probes.py:{frame.lineno})"
        out.write(json.dumps({"id": request["id"], "verdict": verdict, "evidence": evidence}) + "\n")
        out.flush()


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main()
