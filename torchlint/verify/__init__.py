"""`--verify`: confirm findings by running probes under the installed torch, in a
separate, sandboxed process (runner.py). Nothing in this package imports torch, except the
worker's modules (_worker.py, slices.py, _evidence.py and the generated evidence_*.py),
which only the probe worker loads."""
