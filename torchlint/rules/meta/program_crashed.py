"""TL020: a runtime check of `torchlint run` (the run's monitors and judges decide it)."""

from __future__ import annotations

from torchlint.runtime.checks import RuntimeCheck


class ProgramCrashed(RuntimeCheck):
    """Runtime-only check: reported by `torchlint run`.

    ## What it does
    Reports the exception that ended a process of the program (the script, a `torchrun` rank, a
    forked or spawned trainer): the exception and its message, the innermost frame of your code it
    was raised through (the finding's location, with the function), the rank, and how many
    optimizer steps that process had done. When the exception is the documented failure of a
    static finding on a line of that traceback (for example TL101's `element 0 of tensors does not
    require grad`, TL201's `expected target dtype to be Long`, TL601's `UnpicklingError` of a
    weights-only `torch.load`), that finding is reported `confirmed` with the exception as its
    evidence, and TL020 names it; without one, TL020 names the rule whose failure it matches.

    ## Why is this bad?
    A crashed run judged nothing after the crash, and a report that reads "All checks passed!"
    over a traceback is read as a pass, in CI above all. The exception belongs in the report, at
    your line, next to the finding that predicted it. The exit code of `torchlint run` stays the
    program's (1 for an uncaught Python exception).

    ## Example
    ```python
    with torch.no_grad():
        val_loss = F.cross_entropy(model(x), y)
        val_loss.backward()  # RuntimeError: element 0 of tensors does not require grad
    ```

    ## Use instead
    ```python
    with torch.no_grad():
        val_loss = F.cross_entropy(model(x), y)  # evaluation only: no backward
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [sys.excepthook](https://docs.python.org/3/library/sys.html#sys.excepthook)
    - [torch.load and weights_only](https://pytorch.org/docs/stable/generated/torch.load.html)
    """

    code = "TL020"
    name = "program-crashed"
    summary = "The program ended with an uncaught exception: the exception, its frame and the step"
    seen = "the exception that ended a process: its message, your frame, the step; it confirms the static finding it is"
