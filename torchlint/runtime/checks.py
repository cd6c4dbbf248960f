"""The table of runtime-only checks: problems only a run can see, reported by `torchlint run`
and `check_training_step`. They share the code space, docs and `torchlint rule` with the
static rules, but they are not AST rules, so they live in their own registry. No torch here."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RuntimeCheck:
    code: str
    name: str
    summary: str
    severity: str = "error"
    # Shared with `Rule`, so the docs, SARIF and `torchlint rule` treat both alike.
    default_enabled: bool = True
    tags: tuple[str, ...] = ("correctness", "runtime")
    precision: str = "very-high"
    security_severity: None = None


RUNTIME_CHECKS: tuple[RuntimeCheck, ...] = (
    RuntimeCheck("TL020", "program-crashed",
                 "The program ended with an uncaught exception: the exception, its frame and the step"),
    RuntimeCheck("TL120", "parameter-without-gradient",
                 "Parameters the optimizer updates received no gradient in any observed step", "warning"),
    RuntimeCheck("TL121", "non-finite-value",
                 "NaN or Inf first appeared in an activation, the loss or a gradient"),
    RuntimeCheck("TL220", "device-mismatch", "The model's parameters and its input are on different devices"),
    RuntimeCheck("TL221", "label-unusable-by-loss",
                 "Labels with a dtype or a value range the loss cannot use"),
    RuntimeCheck("TL222", "mixed-parameter-dtypes", "The model's floating-point parameters have mixed dtypes",
                 "warning"),
    RuntimeCheck("TL320", "identical-worker-random-streams",
                 "DataLoader workers produced identical random streams"),
    RuntimeCheck("TL420", "initial-loss-far-from-log-classes",
                 "The first classification loss is far above log(C), the loss of uniform predictions", "warning"),
    RuntimeCheck("TL421", "loss-diverged",
                 "The loss grew by orders of magnitude over its first values while staying finite"),
    RuntimeCheck("TL422", "single-class-cross-entropy",
                 "cross_entropy over a single class: the loss is always 0 and the gradients are zero"),
    RuntimeCheck("TL520", "identical-batches-across-ranks",
                 "Every DDP rank received the same batches (no DistributedSampler or sharding)"),
    RuntimeCheck("TL720", "eval-mode-during-backward",
                 "backward ran through a forward done in eval mode with Dropout/BatchNorm layers", "warning"),
)

RUNTIME_CHECKS_BY_CODE: dict[str, RuntimeCheck] = {c.code: c for c in RUNTIME_CHECKS}
RUNTIME_CHECKS_BY_NAME: dict[str, RuntimeCheck] = {c.name: c for c in RUNTIME_CHECKS}

assert len(RUNTIME_CHECKS_BY_CODE) == len(RUNTIME_CHECKS), "duplicate runtime check code"
assert [c.code for c in RUNTIME_CHECKS] == sorted(c.code for c in RUNTIME_CHECKS), "keep the table in code order"
