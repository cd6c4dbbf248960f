"""Helpers the rules' evidence functions share: their fact probes and slice judges, which live
in the rule modules and run only in the --verify worker (scripts/generate_all.py copies them
into the generated evidence_<family>.py). Worker side: torch and the standard library only, never torchlint.

A probe or judge imports what it needs from here inside its body, by this module's name in the
worker (`from _evidence import first_line`): the rule module itself must import neither torch
nor this file, because linting imports every rule module.

A judge sees `runs`, one dict per variant of the slice (slices.run_variant): `obs` maps a tag
to the records of what happened there, each a dict with the call's `func`, `args`, `kwargs`,
`receiver`, its `value` or `exc`, and the gradients around it when the slice asks for them."""

from __future__ import annotations


import torch

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Optional

Result = tuple[str, str]


def raises(fn: Callable[[], Any]) -> Optional[BaseException]:
    """Run `fn`; the exception it raised, or None."""
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the exception is the evidence
        return exc
    return None


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    text = text.split(" Hint:")[0]
    return f"{type(exc).__name__}: {text[:160]}"


def describe(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"a {str(value.dtype).replace('torch.', '')} tensor of shape {tuple(value.shape)}"
    return type(value).__name__


def flag(runs: list[dict[str, Any]], index: int = 0) -> Optional[dict]:
    """The first record of the flagged line in run `index`, or None when it was not reached."""
    recs = runs[index]["obs"].get("flag")
    return recs[0] if recs else None


def failed(rec: Optional[dict], what: str) -> Optional[Result]:
    """For a judge of a flagged call that has to complete: `error` when `rec` raised, else None
    (a judge returns None itself when `rec` is None: the run never got there)."""
    if rec is not None and rec.get("exc") is not None:
        return "error", f"{what} raised {first_line(rec['exc'])}"
    return None


def says(*needles: str) -> Callable[[BaseException], bool]:
    return lambda exc: any(n in str(exc) for n in needles)


def expect_raise(runs: list[dict[str, Any]], matches: Callable[[BaseException], bool], what: str,
                 fine: Callable[[dict], str]) -> Optional[Result]:
    """A judge whose hazard is an exception at the flagged line: `matches` tells it from others."""
    rec = flag(runs)
    if rec is None:
        return None
    exc = rec.get("exc")
    if exc is not None and matches(exc):
        return "confirmed", f"{what} raised {first_line(exc)}"
    if exc is not None:
        return "error", f"{what} raised an unrelated {first_line(exc)}"
    return "not-reproduced", fine(rec)


def nonzero(grads: Optional[dict[str, list[float]]]) -> dict[str, list[float]]:
    return {k: v for k, v in (grads or {}).items() if any(x != 0 for x in v)}
