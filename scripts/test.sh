#!/usr/bin/env bash
# Install torchlint with its test and --verify dependencies, then run the whole suite.
# CPU torch: `torch==2.13.0` resolves to a wheel already on disk; a bare `torch`
# requirement would pull a multi-GB CUDA build.
set -euo pipefail
python -m pip install -q --upgrade pip
python -m pip install -q "torch==2.13.0"
python -m pip install -q -e ".[dev,verify]"
# Static checks first: they take seconds and name the line.
python -m ruff check torchlint tests benchmarks scripts
python -m mypy
# Every core, up to 4 (each --verify test worker holds up to 1 GiB); worksteal rebalances the
# slow sandbox files that would otherwise end on one worker.
python -m pytest -q -n auto --maxprocesses 4 --dist worksteal "$@"
