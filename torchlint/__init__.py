"""torchlint: a static linter for PyTorch code."""

__version__ = "0.1.0"
