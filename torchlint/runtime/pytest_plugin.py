"""pytest plugin (entry point `torchlint`): the `torchlint_runtime` fixture.

    def test_training_step_is_healthy(torchlint_runtime):
        train_one_step(model, batch)
        torchlint_runtime.assert_clean()
"""

from __future__ import annotations


import pytest

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterator
    from torchlint.runtime.api import RuntimeSession


@pytest.fixture
def torchlint_runtime() -> Iterator["RuntimeSession"]:
    """Runtime monitors installed for the test; `.findings()` / `.assert_clean()` report."""
    from torchlint.runtime.api import monitored

    with monitored() as session:
        yield session
