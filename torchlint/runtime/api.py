"""In-process monitoring for a project's own tests: `check_training_step` and `monitored()`."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

from torchlint.diagnostics import Finding
from torchlint.runtime.analysis import Observation, problem_findings, runtime_problems
from torchlint.runtime.monitor import ListSink, Monitor, current, set_current

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Iterator, Optional


class TrainingStepFailed(Exception):
    """The step raised; `findings` holds what the monitors saw up to the error."""

    def __init__(self, findings: list[Finding], error: BaseException) -> None:
        super().__init__(f"the training step raised {type(error).__name__}: {error}")
        self.findings = findings
        self.error = error


class RuntimeSession:
    """The monitors' view of code run inside `monitored()`."""

    def __init__(self, monitor: Monitor, sink: ListSink) -> None:
        self.monitor = monitor
        self.sink = sink

    def findings(self, cwd: Optional[Path] = None) -> list[Finding]:
        """Runtime-only findings so far, located in the calling code."""
        cwd = (cwd or Path.cwd()).resolve()
        self.monitor.dump()
        obs = Observation(list(self.sink.events))
        return sorted(problem_findings(runtime_problems(obs, [], cwd), cwd), key=Finding.sort_key)

    def assert_clean(self) -> None:
        found = self.findings()
        if found:
            lines = "\n".join(f"  {f.path}:{f.row}: {f.code} {f.message}" for f in found)
            raise AssertionError(f"torchlint runtime checks found {len(found)} problem(s):\n{lines}")


@contextmanager
def monitored() -> Iterator[RuntimeSession]:
    """Install the runtime monitors in this process for the duration of the block."""
    import torch  # noqa: F401  (the monitors hook it; fail here, clearly, if it is missing)

    sink = ListSink()
    monitor = Monitor(sink)
    previous = current()
    set_current(monitor)
    monitor.install()
    try:
        yield RuntimeSession(monitor, sink)
    finally:
        monitor.uninstall()
        set_current(previous)


def monitor_findings(step: Callable[[], Any]) -> list[Finding]:
    """Run `step()` (any training code) under the monitors and return the runtime findings."""
    with monitored() as session:
        try:
            step()
        except Exception as exc:
            raise TrainingStepFailed(session.findings(), exc) from exc
        return session.findings()


def check_training_step(model: Any, batch: Any, loss_fn: Callable[[Any, Any], Any], optimizer: Any) -> list[Finding]:
    """Run one instrumented training step and return the runtime findings.

    `batch` is `(inputs, targets)`; inputs may be a tensor, a tuple of positional arguments or a
    dict of keyword arguments for `model`. The step is real: zero_grad, forward, loss, backward,
    optimizer.step(), so the model's weights change (pass a copy to keep them). Raises
    TrainingStepFailed, carrying the findings, when the step raises."""
    if not isinstance(batch, (tuple, list)) or len(batch) != 2:
        raise TypeError("batch must be a pair (inputs, targets)")
    inputs, targets = batch

    def step() -> None:
        optimizer.zero_grad()
        if isinstance(inputs, dict):
            output = model(**inputs)
        elif isinstance(inputs, (tuple, list)):
            output = model(*inputs)
        else:
            output = model(inputs)
        loss = loss_fn(output, targets)
        loss.backward()
        optimizer.step()

    return monitor_findings(step)
