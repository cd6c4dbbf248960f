"""Moved to `torchlint.edits` (issue 17: rules must not import the fix engine's package, which
re-runs the linter). Kept only so that a rule written against the old path still loads;
tests/test_architecture.py reports such a rule as an upward import. Delete once none is left."""

from torchlint.edits import *  # noqa: F401,F403
from torchlint.edits import __all__  # noqa: F401
