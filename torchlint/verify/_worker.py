"""Probe worker: started by torchlint (through _launch.py) as `python -I _worker.py` in a
temporary directory with a scrubbed environment. Imports torch once, then answers one JSON
request per stdin line with one JSON line on stdout. Imports nothing from torchlint (it may
not be importable under -I); `probes`, `slices` and `safety` are found next to this file.

A request is {"id", "code", "facts", "device", "slice": null | {"variants": [...], "stop"}}:
the slice (the user's own code, allow-listed by the parent) runs first; when it cannot
reach the flagged line, the rule's fact probe runs instead and its verdict says so."""

import json
import os
import sys
import traceback


def answer(request: dict) -> tuple:
    import probes
    import slices

    code, device, facts = request["code"], request["device"], request.get("facts") or {}
    why_not = request.get("not_self_contained") or ""
    spec = request.get("slice")
    if spec and device == "cpu":
        result, why_not = slices.run_slice(code, {**facts, **(spec.get("observe") or {})}, spec["variants"],
                                           spec.get("stop", "flag"), bool(spec.get("grads")),
                                           float(request.get("slice_seconds") or 0))
        if result is not None:
            return result[0], result[1], "slice"
    if code not in probes.PROBES:
        return "skipped", f"the flagged code could not run in isolation ({why_not}) and this rule has no fact probe", "none"
    verdict, evidence = probes.PROBES[code](facts, device)
    if verdict == "confirmed":
        verdict = "demonstrated"  # a probe is not the user's code
    note = f" (the flagged code was not run: {why_not})" if why_not else ""
    return verdict, f"probe{note}: {evidence}", "probe"


def main() -> None:
    out = sys.stdout
    sys.stdout = sys.stderr  # stray prints must not corrupt the protocol
    import torch  # noqa: F401 - imported once for all probes

    import probes  # noqa: F401
    import slices  # noqa: F401

    out.write(json.dumps({"torch": torch.__version__, "cuda": bool(torch.cuda.is_available())}) + "\n")
    out.flush()
    for line in sys.stdin:
        request = json.loads(line)
        try:
            verdict, evidence, source = answer(request)
        except Exception as exc:  # noqa: BLE001 - a failing probe is an `error` verdict
            frame = traceback.extract_tb(exc.__traceback__)[-1]
            verdict, source = "error", "probe"
            evidence = (f"probe failed: {type(exc).__name__}: {str(exc)[:200]} "
                        f"({os.path.basename(frame.filename)}:{frame.lineno})")
        out.write(json.dumps({"id": request["id"], "verdict": verdict, "evidence": evidence[:1000],
                              "source": source}) + "\n")
        out.flush()


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main()
