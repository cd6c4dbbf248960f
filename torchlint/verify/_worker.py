"""Probe worker: started by torchlint (through _launch.py, already inside the sandbox) as
`python -I _worker.py` in a private temporary directory with a scrubbed environment. Imports
torch once, then serves files through the fork server (_forkserver.py): each checked file's
findings are answered by a process of its own, forked from this one and confined further.
Each request is one JSON line; each answer one length-prefixed frame (_frames.py). Its
stdout and stderr go to a log that torchlint never passes through raw. Imports nothing from
torchlint (it may not be importable under -I); `evidence_index` (the rules' probes and
judges, generated), `slices`, `_evidence` and `safety` are found next to this file.

A request is {"id", "code", "facts", "device", "slice": null | {"variants": [...], "stop"}}:
the slice (the user's own code, allow-listed by the parent) runs first; when it cannot
reach the flagged line, the rule's fact probe runs instead and its verdict says so."""

import errno
import json
import os
import sys
import traceback


def answer(request: dict) -> tuple:
    import evidence_index
    import slices

    code, device, facts = request["code"], request["device"], request.get("facts") or {}
    spec = request.get("import")
    if spec and spec.get("kind") == "program":  # a rule that compares two runs of the program
        import _project

        result, why = _project.run_variants(code, spec, request["root"], facts,
                                            float(request.get("slice_seconds") or 0))
        if result is not None:
            return result[0], f"ran {spec['file']} as its program: {result[1]}", "import"
        prior = request.get("not_self_contained") or ""
        request, spec = dict(request, not_self_contained=f"{prior}; {why}" if prior else why), None
    if spec:
        import _project
        import evidence_index

        observers = dict(evidence_index.OBSERVERS)
        if spec.get("kind") == "checkpoint":  # an object of the shape the project saves: ours, not the user's
            verdict, evidence = _project.observe_shape(code, spec, facts, observers)
            return ("demonstrated" if verdict == "confirmed" else verdict), f"probe: {evidence}", "probe"
        # the user's own object, its module imported from the project
        verdict, evidence = _project.observe(code, spec, request["root"], facts, observers)
        if verdict != "skipped" or not (request.get("slice") or code in evidence_index.PROBES):
            return verdict, evidence, "import"
        # The import could not show it (no input shape, arguments unknown): the slice or the
        # probe still can, and says so.
        request = dict(request, not_self_contained=evidence)
    why_not = request.get("not_self_contained") or ""
    spec = request.get("slice")
    if spec and device == "cpu":
        result, why_not = slices.run_slice(code, {**facts, **(spec.get("observe") or {})}, spec["variants"],
                                           spec.get("stop", "flag"), bool(spec.get("grads")),
                                           float(request.get("slice_seconds") or 0))
        if result is not None:
            return result[0], result[1], "slice"
    if code not in evidence_index.PROBES:
        return "skipped", f"the flagged code could not run in isolation ({why_not}) and this rule has no fact probe", "none"
    verdict, evidence = evidence_index.PROBES[code](facts, device)
    if verdict == "confirmed":
        verdict = "demonstrated"  # a probe is not the user's code
    note = f" (the flagged code was not run: {why_not})" if why_not else ""
    return verdict, f"probe{note}: {evidence}", "probe"


def denied_by_sandbox(exc: BaseException) -> bool:
    """A probe that needs what this kernel's sandbox forbids (loopback TCP without a network
    namespace, unix sockets or /dev/shm without a private root) is skipped, not an error."""
    if isinstance(exc, OSError) and exc.errno in (errno.EPERM, errno.EACCES, errno.EAFNOSUPPORT):
        return True
    text = str(exc)
    return any(s in text for s in ("PermissionError", "Operation not permitted", "Address family not supported",
                                   "Permission denied"))


def answer_line(line: str, channel: int) -> None:
    import _frames

    request = json.loads(line)
    spec = request.get("import")
    if isinstance(spec, dict) and spec.get("kind") == "program" and "members" in spec:  # one run for all findings
        answer_program(request, spec, channel)
        return
    try:
        verdict, evidence, source = answer(request)
    except Exception as exc:  # noqa: BLE001 - a failing probe is an `error` verdict
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        verdict, source = "error", "probe"
        evidence = (f"probe failed: {type(exc).__name__}: {str(exc)[:200]} "
                    f"({os.path.basename(frame.filename)}:{frame.lineno})")
        if denied_by_sandbox(exc):
            verdict = "skipped"
            evidence = (f"the --verify sandbox here does not allow what this probe needs ({evidence}); "
                        f"active layers: {', '.join(json.loads(os.environ.get('TORCHLINT_SANDBOX', '[]')))}")
    _frames.send(channel, {"kind": "answer", "id": request["id"], "verdict": verdict,
                           "evidence": evidence[:1000], "source": source})


def answer_program(request: dict, spec: dict, channel: int) -> None:
    """The file run as its program (verify/program.py): one answer with every member's
    result. torchlint discards this process afterwards, so what the program changed (torch's
    defaults, a monkeypatch) reaches none of the file's later probes."""
    import _frames
    import _project

    try:
        results = _project.run_program(spec, request["root"], float(request.get("slice_seconds") or 0))
    except Exception as exc:  # noqa: BLE001 - every member falls back to its probe with the reason
        results = [{"why": f"the program run failed: {type(exc).__name__}: {str(exc)[:200]}"}] * len(spec["members"])
    for result in results:
        if "evidence" in result:
            result["evidence"] = result["evidence"][:1000]
    _frames.send(channel, {"kind": "program", "id": request["id"], "results": results})


def main() -> None:
    import _forkserver
    import _frames
    import torch  # noqa: F401 - imported once for all probes and all files

    import evidence_index  # noqa: F401
    import slices  # noqa: F401

    channel = _frames.CHANNEL_FD
    _frames.send(channel, {"kind": "hello", "torch": torch.__version__, "cuda": bool(torch.cuda.is_available())})
    if sys.platform.startswith("linux") and hasattr(os, "fork"):
        _forkserver.serve_forked(answer_line, json.loads(os.environ.get("TORCHLINT_FILE_POLICY") or "{}"), channel)
    else:
        _forkserver.serve_inline(answer_line, channel)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")  # is_available() must not initialise CUDA before fork
    main()
